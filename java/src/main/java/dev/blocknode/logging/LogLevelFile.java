package dev.blocknode.logging;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The level of the plugin's own loggers, changed at run time from a file ({@code --log-level-file}). The chart
 * mounts a ConfigMap key there, so {@code kubectl edit configmap} or {@code helm upgrade --set logLevel=fine}
 * turns the FINE lines on for every node without restarting a plugin that holds volumes (kubelet refreshes a
 * mounted ConfigMap within about a minute).
 *
 * <p>While the file names a level it wins over {@code --log-level}; when it is missing or blank,
 * {@code --log-level} applies again. Anything else leaves the level as it is, with one warning per distinct
 * content. The file is operator configuration, not caller input: it is followed through symbolic links, as a
 * ConfigMap's files are ({@code level -> ..data/level}), but read only up to {@link #MAX_BYTES}, only when it is a
 * regular file, and never waiting: what reads it is given by the entry point ({@link Reader}; os's SmallFiles in
 * the plugin), since this package uses no layer. A FIFO, a directory, a device or a huge file at that path is a
 * warning, and the level stays. Every read, the first one too, is made on the reader's own thread, so the path
 * can never stop or delay the plugin's start.
 */
public final class LogLevelFile implements AutoCloseable {

    /** How often the file is read: small against kubelet's own delay in refreshing a ConfigMap. */
    public static final Duration PERIOD = Duration.ofSeconds(5);

    /** More than any level's name with blanks around it; a bigger file is refused, not read. */
    static final int MAX_BYTES = 64;

    private static final Logger LOG = Logger.getLogger(LogLevelFile.class.getName());

    /** Reads a regular file of at most {@code maxBytes} without waiting; empty when it is not there. */
    @FunctionalInterface
    public interface Reader {
        Optional<byte[]> read(Path file, int maxBytes) throws IOException;
    }

    private final Path file;
    private final LogLevel fallback;
    private final Consumer<LogLevel> apply;
    private final Reader reader;
    private final CountDownLatch firstRead = new CountDownLatch(1);
    private LogLevel current;
    private String refused = "";
    private ScheduledExecutorService thread;

    /**
     * @param fallback the level of {@code --log-level}, in force when the file names none
     * @param apply    sets a level on the plugin's loggers
     */
    LogLevelFile(Path file, LogLevel fallback, Consumer<LogLevel> apply, Reader reader) {
        this.file = Objects.requireNonNull(file);
        this.fallback = Objects.requireNonNull(fallback);
        this.apply = Objects.requireNonNull(apply);
        this.reader = Objects.requireNonNull(reader);
        this.current = fallback;
    }

    /**
     * Reads {@code file} through {@code reader} at once and then every {@link #PERIOD}, on a daemon thread of its
     * own, until closed; returns without waiting for the first read (the caller goes on starting).
     */
    public static LogLevelFile watch(Path file, LogLevel fallback, Reader reader) {
        LogLevelFile watched = new LogLevelFile(file, fallback, LogSetup::setLevel, reader);
        watched.thread = Executors.newSingleThreadScheduledExecutor(task -> {
            Thread thread = new Thread(task, "log-level-file");
            thread.setDaemon(true);
            return thread;
        });
        watched.thread.scheduleWithFixedDelay(() -> {
            try {
                watched.check();
            } finally {
                watched.firstRead.countDown();
            }
        }, 0, PERIOD.toMillis(), TimeUnit.MILLISECONDS);
        return watched;
    }

    /** Waits at most {@code timeout} for the first read of {@link #watch} to end; true when it has (tests). */
    boolean awaitFirstRead(Duration timeout) throws InterruptedException {
        return firstRead.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Reads the file once and applies the level it names (or {@code --log-level}'s); returns the level in force. */
    synchronized LogLevel check() {
        LogLevel wanted;
        boolean gone = false;
        try {
            Optional<byte[]> bytes = reader.read(file, MAX_BYTES);
            String content = bytes.map(b -> new String(b, StandardCharsets.UTF_8).strip()).orElse("");
            gone = bytes.isEmpty();
            wanted = content.isEmpty() ? fallback : LogLevel.parse("log-level-file", content);
            refused = "";
        } catch (IOException | RuntimeException | LinkageError e) {
            // A file that is not a regular one (a FIFO, a directory, a device), too large, or unreadable; content
            // that names no level; a reader that cannot run (its native library): warned once each, level kept.
            String why = e instanceof IllegalArgumentException ? "names no level: " + e.getMessage()
                    : "cannot be read: " + e.getMessage();
            if (!why.equals(refused)) {
                refused = why;
                LOG.warning(() -> "log level file " + file + " " + why + "; the level stays " + label(current));
            }
            return current;
        }
        if (wanted != current) {
            LogLevel before = current;
            current = wanted;
            String line = "log level " + label(before) + " -> " + label(wanted) + " (" + file
                    + (wanted == fallback && gone ? " is gone: --log-level's" : "") + ")";
            // Said while the more verbose of the two levels is in force, at a level it shows.
            if (wanted.level().intValue() > before.level().intValue()) {
                LOG.log(announcement(before), line);
                apply.accept(wanted);
            } else {
                apply.accept(wanted);
                LOG.log(announcement(wanted), line);
            }
        }
        return current;
    }

    private static String label(LogLevel level) {
        return level.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public void close() {
        if (thread != null) {
            thread.shutdownNow();
        }
    }

    /** The level of the line that says what changed: INFO, or the level itself where that hides INFO. */
    static Level announcement(LogLevel level) {
        return level.level().intValue() < Level.INFO.intValue() ? Level.INFO : level.level();
    }
}
