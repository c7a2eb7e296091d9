package dev.blocknode.metrics;

import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.Timer;

/**
 * Time spent in each phase of attaching and releasing volumes (login, scan, device wait, mkfs, mount,
 * flush, delete, logout), recorded into Micrometer's global registry, to which the plugin adds its
 * Prometheus registry. Timing happens deep in the volume and transport layers, which should not need a
 * registry handed through every constructor for it.
 */
public final class Phases {

    /** A phase body that may throw what its caller throws. */
    @FunctionalInterface
    public interface Body<T, E extends Exception> {
        T run() throws E;
    }

    @FunctionalInterface
    public interface VoidBody<E extends Exception> {
        void run() throws E;
    }

    private Phases() {
    }

    public static <T, E extends Exception> T time(String phase, Body<T, E> body) throws E {
        long start = System.nanoTime();
        String outcome = "error";
        try {
            T result = body.run();
            outcome = "ok";
            return result;
        } finally {
            record(phase, outcome, System.nanoTime() - start);
        }
    }

    /** Records a span measured elsewhere, e.g. from a kernel event to the moment a waiter saw its result. */
    public static void record(String phase, String outcome, long nanos) {
        Timer.builder("blocknode_phase")
                .description("time spent in one phase of attaching, preparing or releasing a volume")
                .tag("phase", phase)
                .tag("outcome", outcome)
                .publishPercentileHistogram()
                .register(Metrics.globalRegistry)
                .record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    public static <E extends Exception> void run(String phase, VoidBody<E> body) throws E {
        time(phase, () -> {
            body.run();
            return null;
        });
    }
}
