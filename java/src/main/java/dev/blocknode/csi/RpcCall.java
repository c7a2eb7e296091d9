package dev.blocknode.csi;

import dev.blocknode.csi.server.LoggingInterceptor;
import dev.blocknode.logging.LogContext;
import dev.blocknode.logging.Printable;
import dev.blocknode.metrics.RpcErrors;
import dev.blocknode.outcome.VolumeException;
import io.grpc.Context;
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
        answer(method, "", observer, body);
    }

    /** Runs the body with the RPC, its request number and volume in the log context of every line it logs. */
    static <T> void answer(String method, String volumeId, StreamObserver<T> observer, Body<T> body) {
        Long requestId = LoggingInterceptor.REQUEST_ID.get();
        try (LogContext.Scope ignored = LogContext.enter(new LogContext.Operation(method,
                requestId == null ? 0 : requestId, printable(volumeId)))) {
            T response;
            // kubelet gives up on a call after its deadline and retries it later. The work must not stop
            // half-way because the caller left: it runs detached from the call's cancellation, holding its
            // volume (a retry meanwhile gets ABORTED), and a retry after it finds what it did.
            Context detached = Context.current().fork();
            Context previous = detached.attach();
            try {
                response = body.run();
            } catch (VolumeException e) {
                RpcErrors.count(method, e, e.outcome().name());
                observer.onError(StatusMapper.toStatus(e));
                return;
            } catch (RuntimeException e) {
                RpcErrors.count(method, e, "unexpected");
                observer.onError(StatusMapper.unexpected(method, e));
                return;
            } finally {
                detached.detach(previous);
            }
            observer.onNext(response);
            observer.onCompleted();
        }
    }

    /** A volume id as it may appear in every log line of the call: escaped, and bounded even when refused. */
    static String printable(String volumeId) {
        return Printable.bounded(volumeId, RequestFields.MAX_ID_BYTES);
    }
}
