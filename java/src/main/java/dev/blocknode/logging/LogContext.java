package dev.blocknode.logging;

import java.util.Optional;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The operation a thread is working on: RPC name, request id and volume id. Set for the duration of an
 * RPC by the csi layer and read by the log formatters, so that every line an operation logs, from any
 * layer, carries them without each call site repeating them. (JUL has no MDC; RPCs run one per thread.)
 */
public final class LogContext {

    public record Operation(String rpc, long requestId, String volumeId) {
    }

    private static final ThreadLocal<Operation> CURRENT = new ThreadLocal<>();
    /** What the current operation did, said once at its end (see {@link #outcome}). */
    private static final ThreadLocal<String> OUTCOME = new ThreadLocal<>();

    private LogContext() {
    }

    /** Marks the current thread as working on {@code operation} until the returned scope is closed. */
    public static Scope enter(Operation operation) {
        Operation previous = CURRENT.get();
        String previousOutcome = OUTCOME.get();
        CURRENT.set(operation);
        OUTCOME.remove();
        return () -> {
            if (previous == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(previous);
            }
            if (previousOutcome == null) {
                OUTCOME.remove();
            } else {
                OUTCOME.set(previousOutcome);
            }
        };
    }

    /**
     * Says what the current operation did ("published volume v at /path"). Inside an RPC it becomes part of
     * the RPC's own line (method, request number, status, duration: see LoggingInterceptor), so that a call
     * logs one line, not two; outside one (start-up recovery, say) {@code log} logs it at INFO.
     */
    public static void outcome(Logger log, Supplier<String> message) {
        if (CURRENT.get() != null) {
            OUTCOME.set(message.get());
        } else {
            log.info(message);
        }
    }

    /** What the current operation said it did, if it said anything. */
    public static Optional<String> outcome() {
        return Optional.ofNullable(OUTCOME.get());
    }

    public static Optional<Operation> current() {
        return Optional.ofNullable(CURRENT.get());
    }

    /** A scope whose close cannot fail. */
    public interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}
