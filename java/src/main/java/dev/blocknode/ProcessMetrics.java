package dev.blocknode;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.ProcessStatus;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;

import java.util.OptionalLong;

/**
 * The plugin process's own health beside blocknode's series: resident memory (what the container's memory
 * limit is measured against), the JVM's heap and GC (Micrometer's jvm_memory_* and jvm_gc_* families) and its
 * start time (process_start_time_seconds: a restart shows as a step). Closing stops the GC listener.
 */
final class ProcessMetrics implements AutoCloseable {

    private final JvmGcMetrics gc = new JvmGcMetrics();

    ProcessMetrics(HostPaths paths, MeterRegistry registry) {
        Gauge.builder("process.resident.memory", paths, ProcessMetrics::residentBytes)
                .description("the plugin process's resident memory (VmRSS of /proc/self/status)")
                .baseUnit(BaseUnits.BYTES)
                .register(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        gc.bindTo(registry);
    }

    /** NaN where /proc cannot be read: no sample rather than a made-up one. */
    private static double residentBytes(HostPaths paths) {
        OptionalLong bytes = ProcessStatus.residentBytes(paths);
        return bytes.isPresent() ? bytes.getAsLong() : Double.NaN;
    }

    @Override
    public void close() {
        gc.close();
    }
}
