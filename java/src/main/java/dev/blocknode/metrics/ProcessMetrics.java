package dev.blocknode.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;

import java.util.OptionalLong;
import java.util.function.Supplier;

/**
 * The plugin process's own health beside blocknode's series: resident memory (what the container's memory
 * limit is measured against), the JVM's heap and GC (Micrometer's jvm_memory_* and jvm_gc_* families) and its
 * start time (process_start_time_seconds: a restart shows as a step). Closing stops the GC listener. The resident
 * memory comes in as a supplier (the caller reads /proc/self/status through os), as this package uses no layer.
 */
public final class ProcessMetrics implements AutoCloseable {

    private final JvmGcMetrics gc = new JvmGcMetrics();

    /** {@code residentBytes}: the process's resident memory, empty where it cannot be read. */
    public ProcessMetrics(Supplier<OptionalLong> residentBytes, MeterRegistry registry) {
        // Held strongly: Micrometer holds a gauge's object weakly, and nothing else holds this supplier.
        Gauge.builder("process.resident.memory", residentBytes, ProcessMetrics::orNaN).strongReference(true)
                .description("the plugin process's resident memory (VmRSS of /proc/self/status)")
                .baseUnit(BaseUnits.BYTES)
                .register(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        gc.bindTo(registry);
    }

    /** NaN where /proc cannot be read: no sample rather than a made-up one. */
    private static double orNaN(Supplier<OptionalLong> residentBytes) {
        OptionalLong bytes = residentBytes.get();
        return bytes.isPresent() ? bytes.getAsLong() : Double.NaN;
    }

    @Override
    public void close() {
        gc.close();
    }
}
