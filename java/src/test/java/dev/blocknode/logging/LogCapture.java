package dev.blocknode.logging;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * For tests in any package: listens on the root logger until closed and keeps each record as the plugin's
 * text format writes it (formatted on the logging thread, as the console handler does, so the operation's
 * context is the one of the thread that logged).
 */
public final class LogCapture extends Handler implements AutoCloseable {

    /** One record as written, and whether it carried an exception (whose trace adds indented lines). */
    public record Written(Level level, String text, boolean withTrace) {
    }

    private final List<Written> written = new ArrayList<>();
    private final LogSetup.TextFormatter formatter = new LogSetup.TextFormatter();

    private LogCapture() {
        setLevel(Level.ALL);
    }

    public static LogCapture installed() {
        LogCapture capture = new LogCapture();
        Logger.getLogger("").addHandler(capture);
        return capture;
    }

    @Override
    public synchronized void publish(LogRecord record) {
        written.add(new Written(record.getLevel(), formatter.format(record), record.getThrown() != null));
    }

    public synchronized List<Written> written() {
        return List.copyOf(written);
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        Logger.getLogger("").removeHandler(this);
    }
}
