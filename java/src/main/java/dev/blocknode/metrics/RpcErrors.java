package dev.blocknode.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Metrics;

import java.util.Locale;
import java.util.Optional;

/**
 * Failed CSI calls by method and reason. The status code alone says INTERNAL for a failed login and a
 * failed mkfs alike; the reason is the phase the error escaped from ({@link Phases#failedPhase}), or,
 * when it failed before any phase ran, its outcome (invalid_argument, aborted, failed_precondition...).
 * Both label sets are small and fixed, so the series count stays bounded.
 */
public final class RpcErrors {

    private RpcErrors() {
    }

    /** @param outcome the error's outcome name (an enum constant's name), used when no phase failed */
    public static void count(String method, Throwable error, String outcome) {
        Optional<String> phase = Phases.failedPhase(error);
        Counter.builder("blocknode_rpc_errors")
                .description("failed CSI calls by method and reason: the phase that failed (login, scan, mkfs, "
                        + "mount...) or, when none did, the outcome (invalid_argument, aborted...)")
                .tag("method", method)
                .tag("reason", phase.orElse(outcome.toLowerCase(Locale.ROOT)))
                .register(Metrics.globalRegistry)
                .increment();
    }
}
