package dev.blocknode.metrics;

import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.Timer;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Optional;
import java.util.Set;

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
        } catch (Exception | Error e) {
            markFailed(e, phase);
            throw e;
        } finally {
            record(phase, outcome, System.nanoTime() - start);
        }
    }

    /**
     * The phase an error escaped from first (the innermost one), if it passed through any: the "reason" of
     * a failed RPC in the error counter, e.g. "mkfs" or "logout" rather than just INTERNAL.
     */
    public static Optional<String> failedPhase(Throwable error) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = error; t != null && seen.add(t); t = t.getCause()) {
            for (Throwable suppressed : t.getSuppressed()) {
                if (suppressed instanceof FailedPhase marker) {
                    return Optional.of(marker.phase);
                }
            }
        }
        return Optional.empty();
    }

    private static void markFailed(Throwable error, String phase) {
        if (failedPhase(error).isEmpty()) {
            error.addSuppressed(new FailedPhase(phase));
        }
    }

    /** Rides on an exception as a suppressed one; shows in a logged stack trace as "FailedPhase: mkfs". */
    private static final class FailedPhase extends Exception {
        private final String phase;

        FailedPhase(String phase) {
            super(phase, null, false, false);
            this.phase = phase;
        }
    }

    /** Records a span measured elsewhere, e.g. from a kernel event to the moment a waiter saw its result. */
    public static void record(String phase, String outcome, long nanos) {
        LatencyBuckets.on(Timer.builder("blocknode_phase"))
                .description("time spent in one phase of attaching, preparing or releasing a volume")
                .tag("phase", phase)
                .tag("outcome", outcome)
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
