package dev.blocknode.csi;

import dev.blocknode.volume.VolumeException;
import io.grpc.stub.StreamObserver;

/** Runs a unary RPC body and answers with its result or the mapped status: one shape for every method. */
final class RpcCall {

    @FunctionalInterface
    interface Body<T> {
        T run() throws VolumeException;
    }

    private RpcCall() {
    }

    static <T> void answer(String method, StreamObserver<T> observer, Body<T> body) {
        T response;
        try {
            response = body.run();
        } catch (VolumeException e) {
            observer.onError(StatusMapper.toStatus(e));
            return;
        } catch (RuntimeException e) {
            observer.onError(StatusMapper.unexpected(method, e));
            return;
        }
        observer.onNext(response);
        observer.onCompleted();
    }

    /** A required string field: INVALID_ARGUMENT naming it when empty. */
    static String required(String field, String value) throws VolumeException {
        if (value.isEmpty()) {
            throw VolumeException.invalid(field + " is required");
        }
        if (value.indexOf('\0') >= 0) {
            throw VolumeException.invalid(field + " contains a NUL byte");
        }
        return value;
    }

    /** volume_id: required, and bounded so that it cannot bloat logs and records. */
    static String volumeId(String value) throws VolumeException {
        required("volume_id", value);
        if (value.length() > 1024) {
            throw VolumeException.invalid("volume_id is " + value.length() + " characters long; at most 1024");
        }
        return value;
    }
}
