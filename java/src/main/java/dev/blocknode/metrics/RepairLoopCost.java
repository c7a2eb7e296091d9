package dev.blocknode.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Metrics;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * What the repair loop itself costs: the CPU its thread spent in passes, and how many volumes those passes looked
 * at. Their ratio is the loop's cost per volume and pass, apart from the JVM's compilation and garbage collection,
 * which a process's CPU time mixes in (and which on an idle node is most of it). The loop runs no command for a
 * healthy volume, so its thread's time is all of what one costs; a repair's commands are counted by
 * {@code blocknode_path_repairs} instead.
 */
public final class RepairLoopCost {

    public static final String CPU = "blocknode_path_repair_cpu_seconds";
    public static final String LOOKS = "blocknode_path_repair_volume_looks";

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private RepairLoopCost() {
    }

    /** The series at 0 from the start, so that a rate over them sees the first pass. */
    public static void register() {
        cpu();
        looks();
    }

    /** The CPU time the calling thread has used so far, in ns; -1 where the JVM cannot tell. */
    public static long threadCpuNanos() {
        return THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : -1;
    }

    /** One pass that used {@code cpuNanos} of its thread (negative: not known) and looked at {@code volumes}. */
    public static void passed(long cpuNanos, int volumes) {
        if (cpuNanos >= 0) {
            cpu().increment(cpuNanos / 1e9);
        }
        looks().increment(volumes);
    }

    private static Counter cpu() {
        return Counter.builder(CPU)
                .description("CPU time of the repair loop's thread in its passes (looking at the staged volumes,"
                        + " repairing, sweeping), in seconds; divided by the volume looks' increase over the same"
                        + " window: the loop's cost per volume and pass")
                .register(Metrics.globalRegistry);
    }

    private static Counter looks() {
        return Counter.builder(LOOKS)
                .description("staged volumes the repair loop's passes looked at (one per volume and pass; a volume"
                        + " in back-off or past a pass's time budget is not looked at)")
                .register(Metrics.globalRegistry);
    }
}
