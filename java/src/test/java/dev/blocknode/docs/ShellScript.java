package dev.blocknode.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Shell text as the docs and the Kubernetes tier's scripts write it, cut into simple commands (their words, quotes
 * removed, nothing expanded: {@code $VAR} and {@code $(...)} stay as written) and here-documents. Enough of the shell
 * to compare and run the commands the docs show: continuation lines, comments, quotes, {@code $(...)}, the operators
 * {@code | || && ; & ( )}, and {@code <<TAG} bodies. Not a shell: nothing here is ever executed by one.
 */
record ShellScript(List<Command> commands, List<HereDoc> hereDocs) {

    /** A simple command: the line it starts on, its words (redirections among them, as written). */
    record Command(int line, List<String> words) {

        String text() {
            return String.join(" ", words);
        }
    }

    /** A here-document: the command it feeds and its body, one line per line. */
    record HereDoc(Command command, String body) {
    }

    private static final Set<String> OPERATORS = Set.of("|", "||", "&&", ";", "&", "(", ")");
    private static final Set<String> LEADING_KEYWORDS = Set.of("do", "then", "else", "{", "!", "(");
    private static final Set<String> CLOSING_KEYWORDS = Set.of("done", "fi", "}", ")", "esac");

    static ShellScript parse(String text) {
        List<Command> commands = new ArrayList<>();
        List<HereDoc> hereDocs = new ArrayList<>();
        String[] lines = text.split("\n", -1);
        StringBuilder logical = new StringBuilder();
        int start = 0;
        for (int i = 0; i < lines.length; i++) {
            if (logical.isEmpty()) {
                start = i + 1;
            }
            String line = withoutComment(lines[i]);
            if (line.endsWith("\\")) {
                logical.append(line, 0, line.length() - 1).append(' ');
                continue;
            }
            logical.append(line);
            String sofar = logical.toString().strip();
            if (open(sofar)) { // a quote or $( that goes on on the next line
                logical.append('\n');
                continue;
            }
            if (sofar.endsWith("|") || sofar.endsWith("&&") || sofar.endsWith("||")) {
                logical.append(' ');
                continue;
            }
            List<Command> these = split(start, logical.toString());
            logical.setLength(0);
            commands.addAll(these);
            for (Command command : these) {
                String tag = hereDocTag(command.words());
                if (tag == null) {
                    continue;
                }
                StringBuilder body = new StringBuilder();
                while (++i < lines.length && !lines[i].strip().equals(tag)) {
                    body.append(lines[i]).append('\n');
                }
                hereDocs.add(new HereDoc(command, body.toString()));
            }
        }
        if (!logical.isEmpty()) {
            commands.addAll(split(start, logical.toString()));
        }
        return new ShellScript(List.copyOf(commands), List.copyOf(hereDocs));
    }

    /** Whether the text ends inside a quote or a $(...). */
    private static boolean open(String text) {
        try {
            tokens(text);
            return false;
        } catch (IllegalArgumentException e) {
            return true;
        }
    }

    /** The tag of a {@code <<TAG}, {@code <<'TAG'} or {@code <<-TAG} among the words, or null. */
    private static String hereDocTag(List<String> words) {
        for (int i = 0; i < words.size(); i++) {
            String word = words.get(i);
            if (word.startsWith("<<") && !word.startsWith("<<<")) {
                String tag = word.substring(word.startsWith("<<-") ? 3 : 2);
                return tag.isEmpty() && i + 1 < words.size() ? words.get(i + 1) : tag;
            }
        }
        return null;
    }

    /** The line without a comment: a # that starts a word, outside quotes and $(...). */
    static String withoutComment(String line) {
        char quote = 0;
        int depth = 0;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                } else if (c == '\\' && quote == '"') {
                    i++;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '\\') {
                i++;
            } else if (c == '$' && i + 1 < line.length() && line.charAt(i + 1) == '(') {
                depth++;
                i++;
            } else if (c == ')' && depth > 0) {
                depth--;
            } else if (c == '#' && depth == 0 && (i == 0 || Character.isWhitespace(line.charAt(i - 1)))) {
                return line.substring(0, i).stripTrailing();
            }
        }
        return line;
    }

    /** The simple commands of one logical line. */
    private static List<Command> split(int line, String logical) {
        List<Command> commands = new ArrayList<>();
        List<String> words = new ArrayList<>();
        for (String token : tokens(logical)) {
            if (OPERATORS.contains(token)) {
                addCommand(commands, line, words);
                words = new ArrayList<>();
            } else {
                words.add(token);
            }
        }
        addCommand(commands, line, words);
        return commands;
    }

    private static void addCommand(List<Command> commands, int line, List<String> words) {
        int from = 0;
        while (from < words.size() && LEADING_KEYWORDS.contains(words.get(from))) {
            from++;
        }
        List<String> rest = words.subList(from, words.size());
        if (!rest.isEmpty() && !CLOSING_KEYWORDS.contains(rest.get(0))) {
            commands.add(new Command(line, List.copyOf(rest)));
        }
    }

    /** Words and operators; quotes removed from words, $(...) kept whole as written. */
    static List<String> tokens(String logical) {
        List<String> tokens = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        for (int i = 0; i < logical.length(); i++) {
            char c = logical.charAt(i);
            if (c == '\'' || c == '"') {
                int end = closingQuote(logical, i);
                String inside = logical.substring(i + 1, end);
                word.append(c == '"' ? inside.replace("\\\"", "\"").replace("\\\\", "\\") : inside);
                inWord = true;
                i = end;
            } else if (c == '$' && i + 1 < logical.length() && logical.charAt(i + 1) == '(') {
                int end = closingParenthesis(logical, i + 1);
                word.append(logical, i, end + 1);
                inWord = true;
                i = end;
            } else if (c == '\\' && i + 1 < logical.length()) {
                word.append(logical.charAt(++i));
                inWord = true;
            } else if (Character.isWhitespace(c)) {
                inWord = flush(tokens, word, inWord);
            } else if ("|&;()".indexOf(c) >= 0 && !(c == '&' && word.toString().endsWith(">"))) {
                inWord = flush(tokens, word, inWord);
                boolean doubled = (c == '|' || c == '&') && i + 1 < logical.length() && logical.charAt(i + 1) == c;
                tokens.add(doubled ? "" + c + c : String.valueOf(c));
                i += doubled ? 1 : 0;
            } else {
                word.append(c);
                inWord = true;
            }
        }
        flush(tokens, word, inWord);
        return tokens;
    }

    private static boolean flush(List<String> tokens, StringBuilder word, boolean inWord) {
        if (inWord) {
            tokens.add(word.toString());
            word.setLength(0);
        }
        return false;
    }

    private static int closingQuote(String text, int open) {
        char quote = text.charAt(open);
        for (int i = open + 1; i < text.length(); i++) {
            if (text.charAt(i) == '\\' && quote == '"') {
                i++;
            } else if (quote == '"' && text.startsWith("$(", i)) {
                i = closingParenthesis(text, i + 1);
            } else if (text.charAt(i) == quote) {
                return i;
            }
        }
        throw new IllegalArgumentException("an unclosed " + quote + " in: " + text);
    }

    static int closingParenthesis(String text, int open) {
        int depth = 0;
        for (int i = open; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\'' || c == '"') {
                i = closingQuote(text, i);
            } else if (c == '(') {
                depth++;
            } else if (c == ')' && --depth == 0) {
                return i;
            }
        }
        throw new IllegalArgumentException("an unclosed $( in: " + text);
    }
}
