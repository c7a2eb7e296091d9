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
    private static final ThreadLocal<Outcome> OUTCOME = new ThreadLocal<>();

    private record Outcome(Logger log, String message) {
    }

    private LogContext() {
    }

    /** Marks the current thread as working on {@code operation} until the returned scope is closed. */
    public static Scope enter(Operation operation) {
        Operation previous = CURRENT.get();
        Outcome previousOutcome = OUTCOME.get();
        CURRENT.set(operation);
        OUTCOME.remove();
        return () -> {
            Outcome unsaid = OUTCOME.get();
            if (unsaid != null) {
                // No RPC line took it (the caller had gone, say): it is logged on its own, never lost.
                unsaid.log().info(unsaid.message());
            }
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
     * logs one line, not two; outside one (start-up recovery, say) {@code log} logs it at INFO at once, and
     * if no RPC line takes it by the end of the operation (a call whose caller left), at the end.
     */
    public static void outcome(Logger log, Supplier<String> message) {
        if (CURRENT.get() != null) {
            OUTCOME.set(new Outcome(log, message.get()));
        } else {
            log.info(message);
        }
    }

    /** Takes what the current operation said it did, if it said anything: the taker logs it. */
    public static Optional<String> takeOutcome() {
        Outcome outcome = OUTCOME.get();
        OUTCOME.remove();
        return Optional.ofNullable(outcome).map(Outcome::message);
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
