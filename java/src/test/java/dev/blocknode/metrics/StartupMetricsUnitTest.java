package dev.blocknode.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

class StartupMetricsUnitTest {

    private static double gauge(MeterRegistry registry, String name) {
        return registry.get(name).gauge().value();
    }

    @Test
    void theStartupGaugesReadWhatStartUpFoundAndTheLiveCountsAtEachRead() {
        MeterRegistry registry = new SimpleMeterRegistry();
        AtomicInteger unreadable = new AtomicInteger(2);
        StartupMetrics.register(registry, new StartupMetrics.Recovery(3, 1, 4, 5),
                new StartupMetrics.Live(unreadable::get, () -> 6, () -> true));
        assertEquals(3, gauge(registry, "blocknode_startup_recovered_records"));
        assertEquals(1, gauge(registry, "blocknode_startup_recovery_failures"));
        assertEquals(4, gauge(registry, "blocknode_startup_stale_records"));
        assertEquals(5, gauge(registry, "blocknode_startup_half_done_records"));
        assertEquals(2, gauge(registry, "blocknode_unreadable_staging_records"));
        unreadable.set(0);
        assertEquals(0, gauge(registry, "blocknode_unreadable_staging_records"), "read again, not kept");
        assertEquals(6, gauge(registry, "blocknode_path_sweep_kept"));
        assertEquals(1, gauge(registry, "blocknode_device_waits_event_driven"));
    }

    @Test
    void theLiveGaugesOutliveACollectionOfTheirSuppliers() {
        // Micrometer holds a gauge's object weakly: suppliers nothing else holds must be held by the gauge, or the
        // series reads NaN after the next collection. Capturing lambdas, as Plugin's are: a lambda that captures
        // nothing is one instance its class keeps, and would pass without the fix.
        MeterRegistry registry = new SimpleMeterRegistry();
        AtomicInteger seven = new AtomicInteger(7);
        AtomicInteger eight = new AtomicInteger(8);
        AtomicLong nine = new AtomicLong(9);
        StartupMetrics.register(registry, new StartupMetrics.Recovery(0, 0, 0, 0),
                new StartupMetrics.Live(() -> seven.get(), () -> eight.get(), () -> seven.get() == 0));
        ProcessMetrics process = new ProcessMetrics(() -> OptionalLong.of(nine.get()), registry);
        try {
            for (int i = 0; i < 3; i++) {
                System.gc();
            }
            assertEquals(7, gauge(registry, "blocknode_unreadable_staging_records"));
            assertEquals(8, gauge(registry, "blocknode_path_sweep_kept"));
            assertEquals(0, gauge(registry, "blocknode_device_waits_event_driven"));
            assertEquals(9, gauge(registry, "process.resident.memory"));
        } finally {
            process.close();
        }
    }

    @Test
    void anUnreadableResidentMemoryIsNoSample() {
        MeterRegistry registry = new SimpleMeterRegistry();
        try (ProcessMetrics process = new ProcessMetrics(OptionalLong::empty, registry)) {
            assertEquals(Double.NaN, gauge(registry, "process.resident.memory"));
        }
    }
}
