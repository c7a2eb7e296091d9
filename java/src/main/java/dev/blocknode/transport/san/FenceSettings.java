package dev.blocknode.transport.san;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * How the SAN transports fence (iSCSI and FC here, NVMe/TCP's namespaces too): the takeover time
 * ({@code --fencing-takeover-after}), the limit on one reservation command (the kernel aborts it then, so a dead
 * path cannot hold a caller), and the monotonic clock the takeover rule measures with.
 */
public record FenceSettings(Duration takeoverAfter, Duration commandTimeout, LongSupplier nanoTime) {

    public static final Duration TAKEOVER_AFTER = Duration.ofSeconds(60);
    public static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(10);

    public static final FenceSettings DEFAULTS = of(TAKEOVER_AFTER);

    public static FenceSettings of(Duration takeoverAfter) {
        return new FenceSettings(takeoverAfter, COMMAND_TIMEOUT, System::nanoTime);
    }
}
