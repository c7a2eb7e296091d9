package dev.blocknode.logging;


import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Routes java.util.logging to stderr, one line per record, as JSON or as plain text. Every message, volume id
 * and exception text goes through {@link Printable} here, the one place per sink: caller input quoted
 * anywhere in the code cannot end a line early and start a forged one, nor bloat a line without bound.
 */
public final class LogSetup {

    private LogSetup() {
    }

    /** The plugin's own loggers' parent, held so that the level set on it is not lost with a collected logger. */
    private static final Logger PLUGIN = Logger.getLogger("dev.blocknode");

    public static void configure(LogFormat format) {
        configure(format, LogLevel.INFO);
    }

    /** As {@link #configure(LogFormat)}, with the plugin's own loggers ({@code dev.blocknode}) at {@code level}. */
    public static void configure(LogFormat format, LogLevel level) {
        Logger root = Logger.getLogger("");
        for (Handler handler : root.getHandlers()) {
            root.removeHandler(handler);
        }
        ConsoleHandler handler = new ConsoleHandler();
        handler.setLevel(Level.ALL);
        handler.setFormatter(format == LogFormat.JSON ? new JsonFormatter() : new TextFormatter());
        root.addHandler(handler);
        root.setLevel(Level.INFO);
        // gRPC and Netty are chatty at INFO about things an operator cannot act on.
        Logger.getLogger("io.grpc").setLevel(Level.WARNING);
        PLUGIN.setLevel(level.level());
    }

    static final class TextFormatter extends Formatter {
        @Override
        public String format(LogRecord record) {
            String message = message(this, record);
            StringBuilder line = new StringBuilder(LINE_OVERHEAD + message.length());
            LogTime.append(line, record.getMillis());
            line.append(' ').append(record.getLevel().getName()).append(' ')
                    .append(shortName(record.getLoggerName())).append(": ");
            LogContext.current().ifPresent(op -> line.append('[').append(op.rpc()).append(" #").append(op.requestId())
                    .append(op.volumeId().isEmpty() ? "" : " " + Printable.escape(op.volumeId())).append("] "));
            line.append(message).append('\n');
            appendThrown(line, record);
            return line.toString();
        }
    }

    static final class JsonFormatter extends Formatter {
        @Override
        public String format(LogRecord record) {
            String message = message(this, record);
            StringBuilder line = new StringBuilder(LINE_OVERHEAD + message.length()).append("{\"time\":\"");
            LogTime.append(line, record.getMillis());
            line.append("\",\"level\":\"").append(record.getLevel().getName()).append("\",\"logger\":");
            appendQuoted(line, shortName(record.getLoggerName()));
            appendQuoted(line.append(",\"msg\":"), message);
            LogContext.current().ifPresent(op -> {
                appendQuoted(line.append(",\"rpc\":"), op.rpc());
                line.append(",\"request_id\":").append(op.requestId());
                if (!op.volumeId().isEmpty()) {
                    appendQuoted(line.append(",\"volume_id\":"), op.volumeId());
                }
            });
            if (record.getThrown() != null) {
                StringBuilder trace = new StringBuilder();
                appendThrown(trace, record);
                appendQuoted(line.append(",\"error\":"), trace.toString());
            }
            return line.append("}\n").toString();
        }
    }

    /** Room for a line's fields around its message, so that the line's buffer is sized once. */
    private static final int LINE_OVERHEAD = 192;

    /** The record's message, escaped and bounded (see the class comment). */
    private static String message(Formatter formatter, LogRecord record) {
        return Printable.bounded(formatter.formatMessage(record), Printable.LOG_MESSAGE_LIMIT);
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder(text.length() + 2);
        appendQuoted(out, text);
        return out.toString();
    }

    /**
     * {@code text} as a JSON string. The usual text has nothing to escape: it is found so by one scan and
     * appended whole, instead of a character at a time (a third of a log line's cost when it was).
     */
    static void appendQuoted(StringBuilder out, String text) {
        out.append('"');
        int clean = 0;
        while (clean < text.length() && !needsEscape(text.charAt(clean))) {
            clean++;
        }
        out.append(text, 0, clean);
        for (int i = clean; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (needsEscape(c)) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    /** Quotes, backslashes, controls (C1 too) and the line separators some JSON readers take as line ends. */
    private static boolean needsEscape(char c) {
        if (c >= 0x20 && c < 0x7f) {
            return c == '"' || c == '\\';
        }
        return c < 0x20 || c <= 0x9f || c == '\u2028' || c == '\u2029';
    }

    private static String shortName(String logger) {
        if (logger == null) {
            return "";
        }
        int dot = logger.lastIndexOf('.');
        return dot < 0 ? logger : logger.substring(dot + 1);
    }

    private static void appendThrown(StringBuilder out, LogRecord record) {
        Throwable thrown = record.getThrown();
        while (thrown != null) {
            // An exception's message can quote caller input (a path with a NUL, say): escaped like any message.
            out.append("  ").append(Printable.bounded(thrown.toString(), Printable.STATUS_MESSAGE_LIMIT)).append('\n');
            for (StackTraceElement frame : thrown.getStackTrace()) {
                out.append("    at ").append(frame).append('\n');
            }
            thrown = thrown.getCause();
        }
    }
}
