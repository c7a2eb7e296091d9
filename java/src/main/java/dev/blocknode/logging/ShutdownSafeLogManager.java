package dev.blocknode.logging;

import java.util.logging.LogManager;

/**
 * The JDK's LogManager resets (drops every handler) in its own shutdown hook, which races with ours, so
 * the lines that say how a shutdown went would be lost. This one keeps its handlers until the JVM ends.
 * Installed through the java.util.logging.manager system property before the first logger exists.
 */
public final class ShutdownSafeLogManager extends LogManager {

    @Override
    public void reset() {
        // Intentionally empty: LogSetup configures handlers explicitly, and nothing must remove them.
    }
}
