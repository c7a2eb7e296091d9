package dev.blocknode.logging;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
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
 * ConfigMap's files are ({@code level -> ..data/level}), but read only up to {@link #MAX_BYTES}.
 */
public final class LogLevelFile implements AutoCloseable {

    /** How often the file is read: small against kubelet's own delay in refreshing a ConfigMap. */
    public static final Duration PERIOD = Duration.ofSeconds(5);

    /** More than any level's name with blanks around it; a bigger file is refused, not read. */
    static final int MAX_BYTES = 64;

    private static final Logger LOG = Logger.getLogger(LogLevelFile.class.getName());

    private final Path file;
    private final LogLevel fallback;
    private final Consumer<LogLevel> apply;
    private LogLevel current;
    private String refused = "";
    private ScheduledExecutorService reader;

    /**
     * @param fallback the level of {@code --log-level}, in force when the file names none
     * @param apply    sets a level on the plugin's loggers
     */
    LogLevelFile(Path file, LogLevel fallback, Consumer<LogLevel> apply) {
        this.file = Objects.requireNonNull(file);
        this.fallback = Objects.requireNonNull(fallback);
        this.apply = Objects.requireNonNull(apply);
        this.current = fallback;
    }

    /** Reads {@code file} now and then every {@link #PERIOD} on a daemon thread, until closed. */
    public static LogLevelFile watch(Path file, LogLevel fallback) {
        LogLevelFile watched = new LogLevelFile(file, fallback, LogSetup::setLevel);
        watched.check();
        watched.reader = Executors.newSingleThreadScheduledExecutor(task -> {
            Thread thread = new Thread(task, "log-level-file");
            thread.setDaemon(true);
            return thread;
        });
        long period = PERIOD.toMillis();
        watched.reader.scheduleWithFixedDelay(watched::check, period, period, TimeUnit.MILLISECONDS);
        return watched;
    }

    /** Reads the file once and applies the level it names (or {@code --log-level}'s); returns the level in force. */
    synchronized LogLevel check() {
        LogLevel wanted;
        try {
            String content = read();
            wanted = content.isEmpty() ? fallback : LogLevel.parse("log-level-file", content);
            refused = "";
        } catch (NoSuchFileException e) {
            wanted = fallback;
            refused = "";
        } catch (IOException | IllegalArgumentException e) {
            String why = e instanceof IOException ? "cannot be read: " + e : "names no level: " + e.getMessage();
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
                    + (wanted == fallback && !Files.exists(file) ? " is gone: --log-level's" : "") + ")";
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

    private String read() throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] bytes = in.readNBytes(MAX_BYTES + 1);
            if (bytes.length > MAX_BYTES) {
                throw new IllegalArgumentException("it is longer than " + MAX_BYTES + " bytes");
            }
            return new String(bytes, StandardCharsets.UTF_8).strip();
        }
    }

    private static String label(LogLevel level) {
        return level.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public void close() {
        if (reader != null) {
            reader.shutdownNow();
        }
    }

    /** The level of the line that says what changed: INFO, or the level itself where that hides INFO. */
    static Level announcement(LogLevel level) {
        return level.level().intValue() < Level.INFO.intValue() ? Level.INFO : level.level();
    }
}
