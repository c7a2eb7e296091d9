package dev.blocknode.logging;

import java.util.Locale;
import java.util.logging.Level;

/** The level of the plugin's own loggers ({@code --log-level}): what is logged from {@code dev.blocknode}. */
public enum LogLevel {
    ERROR(Level.SEVERE),
    WARNING(Level.WARNING),
    INFO(Level.INFO),
    /** Also the FINE lines: what each step of a call did. {@code debug} is another name for it. */
    FINE(Level.FINE);

    private final Level level;

    LogLevel(Level level) {
        this.level = level;
    }

    public Level level() {
        return level;
    }

    /** {@code error}, {@code warning}, {@code info}, {@code fine} or {@code debug} (the same as fine), any case. */
    public static LogLevel parse(String flag, String value) {
        String name = value.toLowerCase(Locale.ROOT);
        return switch (name) {
            case "error" -> ERROR;
            case "warning" -> WARNING;
            case "info" -> INFO;
            case "fine", "debug" -> FINE;
            default -> throw new IllegalArgumentException("--" + flag + " must be error, warning, info, fine or debug,"
                    + " got \"" + value + "\"");
        };
    }
}
