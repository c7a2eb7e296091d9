package dev.blocknode.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code blocknode pv}'s CSV input: a header naming the columns, then one LUN per row (RFC 4180 quoting, so a
 * cell may hold a comma-separated list: {@code "10.0.0.1,10.0.0.2"}). Lines starting with {@code #} and blank
 * lines are skipped; a blank cell is an absent column.
 */
final class CsvLunRows {

    private CsvLunRows() {
    }

    static List<LunRow> parse(String text) {
        List<String> header = null;
        List<LunRow> rows = new ArrayList<>();
        int line = 0;
        int dataRow = 0;
        for (String raw : text.split("\r?\n", -1)) {
            line++;
            if (raw.isBlank() || raw.stripLeading().startsWith("#")) {
                continue;
            }
            List<String> cells = cells(raw, line);
            if (header == null) {
                header = cells.stream().map(String::strip).toList();
                for (String column : header) {
                    if (column.isEmpty()) {
                        throw new IllegalArgumentException("line " + line + ": the header has an empty column name");
                    }
                    if (header.indexOf(column) != header.lastIndexOf(column)) {
                        throw new IllegalArgumentException("line " + line + ": the header names column \"" + column
                                + "\" twice");
                    }
                }
                continue;
            }
            dataRow++;
            if (cells.size() != header.size()) {
                throw new IllegalArgumentException("line " + line + " (row " + dataRow + "): " + cells.size()
                        + " cells, but the header has " + header.size() + " columns");
            }
            Map<String, String> columns = new LinkedHashMap<>();
            for (int i = 0; i < cells.size(); i++) {
                String cell = cells.get(i).strip();
                if (!cell.isEmpty()) {
                    columns.put(header.get(i), cell);
                }
            }
            rows.add(new LunRow("row " + dataRow + " (line " + line + ")", columns));
        }
        if (header == null) {
            throw new IllegalArgumentException("no header line: the first line names the columns");
        }
        return rows;
    }

    /** One line's cells; a quoted cell keeps its commas, and "" inside it is one quote. */
    private static List<String> cells(String line, int number) {
        List<String> cells = new ArrayList<>();
        StringBuilder cell = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quoted) {
                if (c == '"' && i + 1 < line.length() && line.charAt(i + 1) == '"') {
                    cell.append('"');
                    i++;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    cell.append(c);
                }
            } else if (c == '"' && cell.toString().isBlank()) {
                cell.setLength(0);
                quoted = true;
            } else if (c == ',') {
                cells.add(cell.toString());
                cell.setLength(0);
            } else {
                cell.append(c);
            }
        }
        if (quoted) {
            throw new IllegalArgumentException("line " + number + ": a quoted cell is not closed (a cell cannot span"
                    + " lines)");
        }
        cells.add(cell.toString());
        return cells;
    }
}
