package dev.blocknode.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;

/**
 * The gauges the plugin sets up as it starts: what start-up found and did with the records interrupted calls left,
 * and three counts read again at each scrape. They take plain numbers and suppliers, so that this package knows
 * none of the records, volumes or device waits they count.
 */
public final class StartupMetrics {

    private StartupMetrics() {
    }

    /** What start-up recovery found and did; fixed once it has run. */
    public record Recovery(int finished, int failed, int stale, int halfDone) {
    }

    /**
     * The counts read at each scrape: unreadable staging record files, the leftovers the last sweep kept, and
     * whether device waits end on kernel uevents.
     */
    public record Live(IntSupplier unreadableRecords, IntSupplier sweepKept, BooleanSupplier eventDrivenWaits) {
    }

    /**
     * The live gauges hold their supplier strongly: Micrometer holds a gauge's object weakly, and a lambda nothing
     * else holds would be collected, after which the series reads NaN.
     */
    public static void register(MeterRegistry registry, Recovery recovery, Live live) {
        Gauge.builder("blocknode_startup_recovered_records", recovery::finished)
                .description("attaches undone and teardowns finished at start, left by interrupted calls")
                .register(registry);
        Gauge.builder("blocknode_startup_recovery_failures", recovery::failed)
                .description("interrupted attaches or teardowns that could not be finished at start (see the log)")
                .register(registry);
        Gauge.builder("blocknode_startup_stale_records", recovery::stale)
                .description("staging records at start whose device or mount was not in place").register(registry);
        Gauge.builder("blocknode_startup_half_done_records", recovery::halfDone)
                .description("staging records at start left mid-operation by an interrupted call").register(registry);
        Gauge.builder("blocknode_unreadable_staging_records", live.unreadableRecords(), IntSupplier::getAsInt)
                .strongReference(true)
                .description("staging record files that cannot be read (corrupt, of a newer format, not a regular"
                        + " file, too large): each one's volume is refused until the file is repaired or removed;"
                        + " the log names them").register(registry);
        Gauge.builder("blocknode_path_sweep_kept", live.sweepKept(), IntSupplier::getAsInt).strongReference(true)
                .description("leftovers the repair loop's last sweep found that no staging record names, but left"
                        + " alone because blocknode cannot prove it may remove them (a session that carries a disk, a"
                        + " logout that failed, a LUN's map that is open or mounted); the log and NodeGetStorageHealth"
                        + " name them").register(registry);
        Gauge.builder("blocknode_device_waits_event_driven", live.eventDrivenWaits(), w -> w.getAsBoolean() ? 1 : 0)
                .strongReference(true)
                .description("1 while device waits end on kernel uevents, 0 while they only poll").register(registry);
    }
}
