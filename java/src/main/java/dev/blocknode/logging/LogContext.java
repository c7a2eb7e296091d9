package dev.blocknode.logging;

import java.util.Optional;

/**
 * The operation a thread is working on: RPC name, request id and volume id. Set for the duration of an
 * RPC by the csi layer and read by the log formatters, so that every line an operation logs, from any
 * layer, carries them without each call site repeating them. (JUL has no MDC; RPCs run one per thread.)
 */
public final class LogContext {

    public record Operation(String rpc, long requestId, String volumeId) {
    }

    private static final ThreadLocal<Operation> CURRENT = new ThreadLocal<>();

    private LogContext() {
    }

    /** Marks the current thread as working on {@code operation} until the returned scope is closed. */
    public static Scope enter(Operation operation) {
        Operation previous = CURRENT.get();
        CURRENT.set(operation);
        return () -> {
            if (previous == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(previous);
            }
        };
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
