package dev.blocknode.client;

import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVRecord;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * {@code blocknode pv}'s CSV input, parsed by Commons CSV as RFC 4180 says, one LUN at a time: a header naming the
 * columns, then one LUN per row; a cell holding commas is quoted ({@code "10.0.0.1,10.0.0.2"}), and a quote opens a
 * quoted cell only as the cell's first character (so {@code , "a,b"} is two cells, as spreadsheets and other readers
 * see it). Lines starting with {@code #} and empty lines are skipped; a blank cell is an absent column.
 */
final class CsvLunRows {

    private static final CSVFormat FORMAT = CSVFormat.RFC4180.builder().setCommentMarker('#')
            .setIgnoreEmptyLines(true).build();

    private CsvLunRows() {
    }

    /**
     * Hands each LUN to {@code rows} as soon as it is read.
     *
     * @throws IllegalArgumentException for a header or row that does not parse, naming its line
     * @throws IOException              when the input cannot be read, or is larger than {@link LimitedInput} allows
     */
    static void read(Reader input, Consumer<LunRow> rows) throws IOException {
        try (CSVParser parser = CSVParser.parse(input, FORMAT)) {
            Iterator<CSVRecord> records = parser.iterator();
            List<String> header = null;
            int dataRow = 0;
            while (hasNext(records)) {
                CSVRecord record = records.next();
                long line = parser.getCurrentLineNumber();
                List<String> cells = record.toList();
                if (cells.size() == 1 && cells.get(0).isBlank()) {
                    continue; // a line of blanks
                }
                if (header == null) {
                    header = header(cells, line);
                    continue;
                }
                dataRow++;
                if (cells.size() != header.size()) {
                    throw new IllegalArgumentException("line " + line + " (row " + dataRow + "): " + cells.size()
                            + " cells, but the header has " + header.size() + " columns" + quoteHint(cells));
                }
                Map<String, String> columns = new LinkedHashMap<>();
                for (int i = 0; i < cells.size(); i++) {
                    String cell = cells.get(i).strip();
                    if (!cell.isEmpty()) {
                        columns.put(header.get(i), cell);
                    }
                }
                rows.accept(new LunRow("row " + dataRow + " (line " + line + ")", columns));
            }
            if (header == null) {
                throw new IllegalArgumentException("no header line: the first line names the columns");
            }
        }
    }

    private static List<String> header(List<String> cells, long line) {
        List<String> header = cells.stream().map(String::strip).toList();
        for (String column : header) {
            if (column.isEmpty()) {
                throw new IllegalArgumentException("line " + line + ": the header has an empty column name");
            }
            if (header.indexOf(column) != header.lastIndexOf(column)) {
                throw new IllegalArgumentException("line " + line + ": the header names column \"" + column
                        + "\" twice");
            }
        }
        return header;
    }

    /** The likeliest cause of a row with too many cells: a quoted cell after a blank, which RFC 4180 does not quote. */
    private static String quoteHint(List<String> cells) {
        boolean blankThenQuote = cells.stream().anyMatch(c -> !c.isEmpty() && Character.isWhitespace(c.charAt(0))
                && c.strip().startsWith("\""));
        return blankThenQuote ? " (a quote opens a quoted cell only right after the comma: write ,\"a,b\" with no"
                + " blank before the quote)" : "";
    }

    /** Commons CSV's iterator wraps a read error, ours (a limit) included, as unchecked: unwrapped here. */
    private static boolean hasNext(Iterator<CSVRecord> records) throws IOException {
        try {
            return records.hasNext();
        } catch (UncheckedIOException e) {
            if (e.getCause() instanceof LimitedInput.Refused refused) {
                throw refused;
            }
            throw new IllegalArgumentException(e.getCause() == null ? e.getMessage() : e.getCause().getMessage(), e);
        }
    }
}
