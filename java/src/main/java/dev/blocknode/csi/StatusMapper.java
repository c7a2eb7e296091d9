package dev.blocknode.csi;

import dev.blocknode.logging.Printable;
import dev.blocknode.outcome.VolumeException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The one place where domain outcomes become gRPC status codes, and so the one place a status message is
 * made safe for the caller: escaped (a message may quote a caller's path or id, and kubelet logs it and
 * shows it in events) and cut to {@link Printable#STATUS_MESSAGE_LIMIT} (gRPC's C-core clients refuse a
 * status message over 16 KiB).
 */
final class StatusMapper {

    private static final Logger LOG = Logger.getLogger(StatusMapper.class.getName());

    private StatusMapper() {
    }

    static StatusRuntimeException toStatus(VolumeException e) {
        Status status = switch (e.outcome()) {
            case INVALID_ARGUMENT -> Status.INVALID_ARGUMENT;
            case NOT_FOUND -> Status.NOT_FOUND;
            case ALREADY_EXISTS -> Status.ALREADY_EXISTS;
            case FAILED_PRECONDITION -> Status.FAILED_PRECONDITION;
            case ABORTED -> Status.ABORTED;
            case OUT_OF_RANGE -> Status.OUT_OF_RANGE;
            case RESOURCE_EXHAUSTED -> Status.RESOURCE_EXHAUSTED;
            case INTERNAL -> Status.INTERNAL;
        };
        return status.withDescription(forCaller(e.getMessage())).asRuntimeException();
    }

    /** A bug or an unexpected failure: INTERNAL, logged with its stack trace, never lost. */
    static StatusRuntimeException unexpected(String method, RuntimeException e) {
        LOG.log(Level.SEVERE, method + " failed unexpectedly", e);
        return Status.INTERNAL.withDescription(forCaller(method + " failed unexpectedly: " + e)).asRuntimeException();
    }

    private static String forCaller(String message) {
        return Printable.bounded(message == null ? "" : message, Printable.STATUS_MESSAGE_LIMIT);
    }
}
