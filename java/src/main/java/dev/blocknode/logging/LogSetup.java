package dev.blocknode.logging;


import java.time.Instant;
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

    public static void configure(LogFormat format) {
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
    }

    static final class TextFormatter extends Formatter {
        @Override
        public String format(LogRecord record) {
            StringBuilder line = new StringBuilder()
                    .append(Instant.ofEpochMilli(record.getMillis())).append(' ')
                    .append(record.getLevel().getName()).append(' ')
                    .append(shortName(record.getLoggerName())).append(": ");
            LogContext.current().ifPresent(op -> line.append('[').append(op.rpc()).append(" #").append(op.requestId())
                    .append(op.volumeId().isEmpty() ? "" : " " + Printable.escape(op.volumeId())).append("] "));
            line.append(message(this, record)).append('\n');
            appendThrown(line, record);
            return line.toString();
        }
    }

    static final class JsonFormatter extends Formatter {
        @Override
        public String format(LogRecord record) {
            StringBuilder line = new StringBuilder("{\"time\":\"").append(Instant.ofEpochMilli(record.getMillis()))
                    .append("\",\"level\":\"").append(record.getLevel().getName())
                    .append("\",\"logger\":").append(quote(shortName(record.getLoggerName())))
                    .append(",\"msg\":").append(quote(message(this, record)));
            LogContext.current().ifPresent(op -> {
                line.append(",\"rpc\":").append(quote(op.rpc())).append(",\"request_id\":").append(op.requestId());
                if (!op.volumeId().isEmpty()) {
                    line.append(",\"volume_id\":").append(quote(op.volumeId()));
                }
            });
            if (record.getThrown() != null) {
                StringBuilder trace = new StringBuilder();
                appendThrown(trace, record);
                line.append(",\"error\":").append(quote(trace.toString()));
            }
            return line.append("}\n").toString();
        }
    }

    /** The record's message, escaped and bounded (see the class comment). */
    private static String message(Formatter formatter, LogRecord record) {
        return Printable.bounded(formatter.formatMessage(record), Printable.LOG_MESSAGE_LIMIT);
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    // Also C1 controls and the line separators some JSON readers (JavaScript) take as line ends.
                    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == '\u2028' || c == '\u2029') {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
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
