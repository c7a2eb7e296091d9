package dev.blocknode.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A page's fenced code blocks, each with the marker on the line right before its opening fence:
 * {@code <!-- checked: CHECKER ARGS -->} (a test runs it, or it is what a tier runs) or {@code <!-- example: REASON -->}
 * (it needs what this machine has not: a cluster, a SAN, a registry). Markers anywhere else, malformed ones and an
 * unclosed fence are {@link #problems()}: a marker that is not where the test looks would silently mark nothing.
 */
record DocPage(String path, List<Block> blocks, List<Inline> inlines, List<String> problems) {

    private static final Pattern MARKER = Pattern.compile("<!--\\s*(checked|example):\\s*(.*?)\\s*-->");
    private static final Pattern MARKER_LIKE = Pattern.compile("<!--\\s*(checked|example)\\b.*");

    /** One fenced block: its first line's number (the opening fence), language, marker and text (unindented). */
    record Block(String page, int line, String language, Kind kind, String marker, String text) {

        String where() {
            return page + ":" + line;
        }

        /** The checker a {@code checked:} marker names: its first word. */
        String checker() {
            return marker.split("\\s+", 2)[0];
        }

        /** What follows the checker's name in a {@code checked:} marker. */
        String checkerArgs() {
            String[] parts = marker.split("\\s+", 2);
            return parts.length > 1 ? parts[1] : "";
        }
    }

    enum Kind { CHECKED, EXAMPLE, UNMARKED }

    /** A code span of the prose ({@code `kubectl delete pv NAME`}), which may run over lines of its paragraph. */
    record Inline(String page, int line, String text) {

        String where() {
            return page + ":" + line;
        }
    }

    private static final Pattern SPAN = Pattern.compile("`((?:[^`\\n]|\\n(?![ \\t]*\\n))+)`");

    static DocPage parse(String path, String markdown) {
        List<Block> blocks = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        String[] lines = markdown.split("\n", -1);
        StringBuilder prose = new StringBuilder();
        for (int i = 0; i < lines.length; i++) {
            prose.append(lines[i].strip().startsWith("```") ? "" : lines[i]).append('\n');
            String stripped = lines[i].strip();
            if (MARKER_LIKE.matcher(stripped).matches()) {
                boolean beforeFence = i + 1 < lines.length && lines[i + 1].strip().startsWith("```");
                if (!MARKER.matcher(stripped).matches()) {
                    problems.add(path + ":" + (i + 1) + ": a malformed marker (<!-- checked: HOW --> or"
                            + " <!-- example: WHY -->): " + stripped);
                } else if (!beforeFence) {
                    problems.add(path + ":" + (i + 1) + ": a marker that is not on the line right before a code"
                            + " block's opening fence marks nothing: " + stripped);
                }
                continue;
            }
            if (!stripped.startsWith("```")) {
                continue;
            }
            int indent = lines[i].indexOf('`');
            int close = i + 1;
            while (close < lines.length && !lines[close].strip().equals("```")) {
                close++;
            }
            if (close == lines.length) {
                problems.add(path + ":" + (i + 1) + ": a code block that is never closed");
                break;
            }
            StringBuilder text = new StringBuilder();
            for (int j = i + 1; j < close; j++) {
                String line = lines[j];
                int cut = 0;
                while (cut < indent && cut < line.length() && line.charAt(cut) == ' ') {
                    cut++;
                }
                text.append(line.substring(cut)).append('\n');
            }
            Matcher marker = i > 0 ? MARKER.matcher(lines[i - 1].strip()) : null;
            Kind kind = Kind.UNMARKED;
            String body = "";
            if (marker != null && marker.matches()) {
                kind = marker.group(1).equals("checked") ? Kind.CHECKED : Kind.EXAMPLE;
                body = marker.group(2);
            }
            blocks.add(new Block(path, i + 1, stripped.substring(3).strip(), kind, body, text.toString()));
            prose.append("\n".repeat(close - i));
            i = close;
        }
        List<Inline> inlines = new ArrayList<>();
        Matcher span = SPAN.matcher(prose);
        while (span.find()) {
            int line = (int) prose.substring(0, span.start()).chars().filter(c -> c == '\n').count() + 1;
            inlines.add(new Inline(path, line, span.group(1).replace('\n', ' ').replaceAll(" {2,}", " ")));
        }
        return new DocPage(path, List.copyOf(blocks), List.copyOf(inlines), List.copyOf(problems));
    }
}
