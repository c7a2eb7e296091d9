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

    /** The plugin's own loggers at {@code level} from now on (a run-time change: see {@link LogLevelFile}). */
    public static void setLevel(LogLevel level) {
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
            JsonString.appendQuoted(line, shortName(record.getLoggerName()));
            JsonString.appendQuoted(line.append(",\"msg\":"), message);
            LogContext.current().ifPresent(op -> {
                JsonString.appendQuoted(line.append(",\"rpc\":"), op.rpc());
                line.append(",\"request_id\":").append(op.requestId());
                if (!op.volumeId().isEmpty()) {
                    JsonString.appendQuoted(line.append(",\"volume_id\":"), op.volumeId());
                }
            });
            if (record.getThrown() != null) {
                StringBuilder trace = new StringBuilder();
                appendThrown(trace, record);
                JsonString.appendQuoted(line.append(",\"error\":"), trace.toString());
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
