package dev.blocknode.multipath;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * multipath.conf's shape, as the file and {@code multipathd show config} write it: sections ({@code defaults {},
 * blacklist { device { } }}) of {@code key value} lines. Comments ({@code #}, {@code !}) and quotes are dropped;
 * nothing is interpreted here. Tolerant: a stray brace closes nothing rather than failing. Read by the doctor's
 * checks and by {@link FindMultipaths}.
 */
public final class MultipathConfig {

    /** One {@code name { ... }} section: its {@code key value} entries in order, and the sections inside it. */
    public record Section(String name, List<Entry> entries, List<Section> sections) {

        /** The last value given for {@code key} here (multipath takes the last one). */
        public Optional<String> value(String key) {
            Optional<String> found = Optional.empty();
            for (Entry entry : entries) {
                if (entry.key().equals(key)) {
                    found = Optional.of(entry.value());
                }
            }
            return found;
        }

        public List<Section> sections(String name) {
            return sections.stream().filter(s -> s.name().equals(name)).toList();
        }

        public boolean isEmpty() {
            return entries.isEmpty() && sections.isEmpty();
        }
    }

    public record Entry(String key, String value) {
    }

    private MultipathConfig() {
    }

    /** The whole text as the children of one unnamed top section. */
    public static Section parse(String text) {
        List<Section> stack = new ArrayList<>();
        stack.add(new Section("", new ArrayList<>(), new ArrayList<>()));
        for (String raw : text.lines().toList()) {
            List<String> tokens = tokens(raw);
            if (tokens.isEmpty()) {
                continue;
            }
            if (tokens.getLast().equals("{")) {
                Section section = new Section(tokens.getFirst(), new ArrayList<>(), new ArrayList<>());
                stack.getLast().sections().add(section);
                stack.add(section);
            } else if (tokens.getFirst().equals("}")) {
                if (stack.size() > 1) {
                    stack.removeLast();
                }
            } else {
                stack.getLast().entries().add(new Entry(tokens.getFirst(),
                        String.join(" ", tokens.subList(1, tokens.size()))));
            }
        }
        return stack.getFirst();
    }

    /** A line's words: a quoted value is one word without its quotes; a comment ends the line. */
    private static List<String> tokens(String line) {
        List<String> tokens = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean quoted = false;
        boolean inWord = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quoted) {
                if (c == '"') {
                    quoted = false;
                } else {
                    word.append(c);
                }
            } else if (c == '"') {
                quoted = true;
                inWord = true;
            } else if (c == '#' || c == '!') { // outside quotes, either starts a comment, as multipath reads it
                break;
            } else if (Character.isWhitespace(c)) {
                if (inWord) {
                    tokens.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            tokens.add(word.toString());
        }
        return tokens;
    }
}
