package dev.blocknode.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code blocknode pv}'s YAML input: a sequence of flat mappings, one LUN each, whose values are scalars (plain,
 * 'single' or "double" quoted) or lists ({@code [a, b]}, or "- item" lines under the key), a list becoming the
 * comma-separated value volume_context takes. Only this subset: the jar carries no YAML library, and a LUN list
 * needs nothing deeper; anything else is refused with its line, never guessed at.
 */
final class YamlLunRows {

    private YamlLunRows() {
    }

    static List<LunRow> parse(String text) {
        List<LunRow> rows = new ArrayList<>();
        Map<String, String> current = null;
        String where = null;
        String listKey = null; // a key with no value on its line: its "- item" lines follow, more indented
        List<String> listItems = new ArrayList<>();
        int keyIndent = -1;
        int itemIndent = -1; // where the current LUN's keys start: a deeper key would be a nested mapping
        int number = 0;
        for (String raw : text.split("\r?\n", -1)) {
            number++;
            String line = withoutComment(raw);
            if (line.isBlank() || line.strip().equals("---")) {
                continue;
            }
            int indent = line.length() - line.stripLeading().length();
            String body = line.strip();
            if (raw.indexOf('\t') >= 0 && raw.indexOf('\t') < indent + 1) {
                throw new IllegalArgumentException("line " + number + ": a tab in the indentation (YAML allows spaces"
                        + " only)");
            }
            // Items under their key or level with it (both are YAML): never at 0, where a new LUN starts.
            if (listKey != null && indent >= keyIndent && indent > 0 && body.startsWith("- ")) {
                listItems.add(scalar(body.substring(2).strip(), number));
                continue;
            }
            listKey = finishList(current, listKey, listItems, number);
            if (indent == 0 && body.startsWith("-")) {
                if (current != null) {
                    rows.add(new LunRow(where, current));
                }
                current = new LinkedHashMap<>();
                where = "item " + (rows.size() + 1) + " (line " + number + ")";
                body = body.substring(1).strip();
                indent = body.isEmpty() ? -1 : line.indexOf(body, indent + 1);
                itemIndent = indent;
                if (body.isEmpty()) {
                    continue;
                }
            } else if (current == null || indent == 0) {
                throw new IllegalArgumentException("line " + number + ": expected \"- \" starting a LUN (the input"
                        + " is a list of LUNs, each a mapping of column: value)");
            }
            if (itemIndent < 0) {
                itemIndent = indent; // "-" alone on its line: the keys start on the next one
            }
            if (indent != itemIndent) {
                throw new IllegalArgumentException("line " + number + ": indented unlike the LUN's other columns"
                        + " (a column's value is a scalar or a list, never a mapping)");
            }
            int colon = keyEnd(body);
            if (colon < 0) {
                throw new IllegalArgumentException("line " + number + ": expected \"column: value\"");
            }
            String key = body.substring(0, colon).strip();
            String value = body.substring(colon + 1).strip();
            if (current.containsKey(key) || key.equals(listKey)) {
                throw new IllegalArgumentException("line " + number + ": column \"" + key + "\" given twice");
            }
            if (value.isEmpty()) {
                listKey = key;
                keyIndent = indent;
                continue;
            }
            String parsed = value.startsWith("[") ? flowList(value, number) : scalar(value, number);
            if (!parsed.isEmpty()) {
                current.put(key, parsed);
            }
        }
        finishList(current, listKey, listItems, number);
        if (current != null) {
            rows.add(new LunRow(where, current));
        }
        return rows;
    }

    /** Puts a block list's items (if any) under its key; null, for "no list open". */
    private static String finishList(Map<String, String> current, String listKey, List<String> items, int number) {
        if (listKey != null) {
            if (!items.isEmpty()) {
                current.put(listKey, String.join(",", items));
            }
            items.clear();
        }
        return null;
    }

    private static int keyEnd(String body) {
        int colon = body.indexOf(": ");
        if (colon < 0 && body.endsWith(":")) {
            colon = body.length() - 1;
        }
        return colon;
    }

    private static String flowList(String value, int number) {
        if (!value.endsWith("]")) {
            throw new IllegalArgumentException("line " + number + ": a [list] must close on its line");
        }
        List<String> items = new ArrayList<>();
        for (String item : value.substring(1, value.length() - 1).split(",")) {
            if (!item.isBlank()) {
                items.add(scalar(item.strip(), number));
            }
        }
        return String.join(",", items);
    }

    private static String scalar(String value, int number) {
        if (value.startsWith("\"")) {
            if (value.length() < 2 || !value.endsWith("\"")) {
                throw new IllegalArgumentException("line " + number + ": a \"quoted\" value must close on its line");
            }
            StringBuilder out = new StringBuilder();
            String inner = value.substring(1, value.length() - 1);
            for (int i = 0; i < inner.length(); i++) {
                char c = inner.charAt(i);
                if (c == '\\' && i + 1 < inner.length() && (inner.charAt(i + 1) == '"' || inner.charAt(i + 1) == '\\')) {
                    out.append(inner.charAt(++i));
                } else if (c == '\\' || c == '"') {
                    throw new IllegalArgumentException("line " + number + ": only \\\" and \\\\ are escapes this"
                            + " input takes");
                } else {
                    out.append(c);
                }
            }
            return out.toString();
        }
        if (value.startsWith("'")) {
            if (value.length() < 2 || !value.endsWith("'")) {
                throw new IllegalArgumentException("line " + number + ": a 'quoted' value must close on its line");
            }
            return value.substring(1, value.length() - 1).replace("''", "'");
        }
        if (value.startsWith("{") || value.startsWith("&") || value.startsWith("*") || value.startsWith("|")
                || value.startsWith(">") || value.startsWith("!")) {
            throw new IllegalArgumentException("line " + number + ": only plain or quoted values and [lists] are"
                    + " taken here");
        }
        return value;
    }

    /** A '#' at the line's start or after a space begins a comment, unless it is inside quotes. */
    private static String withoutComment(String line) {
        char quote = 0;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                }
            } else if ((c == '"' || c == '\'') && opensValue(line, i)) {
                quote = c;
            } else if (c == '#' && (i == 0 || Character.isWhitespace(line.charAt(i - 1)))) {
                return line.substring(0, i);
            }
        }
        return line;
    }

    /** A quote opens a quoted value only where a value starts: "it's" is a plain value with an apostrophe. */
    private static boolean opensValue(String line, int at) {
        String before = line.substring(0, at).stripTrailing();
        return before.isEmpty() || "-:[,".indexOf(before.charAt(before.length() - 1)) >= 0;
    }
}
