package dev.blocknode.os.wait;

import java.io.IOException;
import java.time.Duration;

/** A {@link DeviceWaiter} deadline passed before the awaited condition held. The message names the condition. */
public final class WaitTimeoutException extends IOException {

    private final String awaited;

    public WaitTimeoutException(String awaited, Duration waited, String lastSeen) {
        super("timed out after " + seconds(waited) + " waiting for " + awaited
                + (lastSeen == null || lastSeen.isBlank() ? "" : " (last seen: " + lastSeen + ")"));
        this.awaited = awaited;
    }

    public String awaited() {
        return awaited;
    }

    private static String seconds(Duration duration) {
        long millis = duration.toMillis();
        return millis % 1000 == 0 ? millis / 1000 + " s" : millis + " ms";
    }
}
