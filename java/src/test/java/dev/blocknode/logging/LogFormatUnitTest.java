package dev.blocknode.logging;

import org.junit.jupiter.api.Test;

import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A newline in a caller's devicePath or volume_id, quoted in a message, wrote a raw
 * line break into the text log, so a caller could append a whole forged line. Whatever a message holds, a
 * record is one line (plus, with an exception, its indented trace).
 */
class LogFormatUnitTest {

    private static final String FORGED = "2026-01-01T00:00:00.000Z SEVERE rpc: forged";

    private static LogRecord record(String message, Throwable thrown) {
        LogRecord record = new LogRecord(Level.WARNING, message);
        record.setLoggerName("dev.blocknode.rpc");
        record.setThrown(thrown);
        return record;
    }

    @Test
    void aTextMessageCannotStartALine() {
        String line = new LogSetup.TextFormatter().format(record("device /dev/x\n" + FORGED + "\r\n\u2028"
                + FORGED + "\u0085" + FORGED, null));
        assertEquals(line.length() - 1, line.indexOf('\n'), line);
        assertFalse(Printable.hasUnprintable(line.substring(0, line.length() - 1)), line);
        assertTrue(line.contains("/dev/x\\n" + FORGED), line);
    }

    @Test
    void anExceptionMessageCannotStartALine() {
        String text = new LogSetup.TextFormatter().format(record("failed",
                new IllegalStateException("bad path /x\n" + FORGED, new RuntimeException("\0\n" + FORGED))));
        String[] lines = text.split("\n");
        for (int i = 1; i < lines.length; i++) {
            assertTrue(lines[i].startsWith("  "), "every line after the first is indented: " + lines[i]);
        }
        assertFalse(text.contains("\0"), text);
    }

    @Test
    void theVolumeIdOfTheOperationIsEscaped() {
        try (LogContext.Scope ignored = LogContext.enter(new LogContext.Operation("NodeStageVolume", 7,
                "v\n" + FORGED))) {
            String line = new LogSetup.TextFormatter().format(record("staged", null));
            assertEquals(line.length() - 1, line.indexOf('\n'), line);
        }
    }

    @Test
    void aJsonLineIsOneLineAndEscapesWhatJavaScriptTakesForALineEnd() {
        Formatter json = new LogSetup.JsonFormatter();
        String line = json.format(record("a\nb\u2028c\u0085d", new RuntimeException("e\nf")));
        assertEquals(line.length() - 1, line.indexOf('\n'), line);
        assertFalse(line.contains("\u2028") || line.contains("\u0085"), line);
    }

    @Test
    void aHugeMessageIsCut() {
        String line = new LogSetup.TextFormatter().format(record("x".repeat(100_000), null));
        assertTrue(line.length() < Printable.LOG_MESSAGE_LIMIT + 200, "line of " + line.length());
        assertTrue(line.contains("more characters cut]"), line.substring(line.length() - 60));
    }
}
