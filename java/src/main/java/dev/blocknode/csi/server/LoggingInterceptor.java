package dev.blocknode.csi.server;

import dev.blocknode.logging.LogContext;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One log line per finished RPC: method, request number, status and duration, and what the call said it
 * did ({@link LogContext#outcome}), so that a publish is one line, not two. Requests are never
 * logged whole, so secrets in them cannot reach a log. Frequent read-only calls log at FINE.
 */
public final class LoggingInterceptor implements ServerInterceptor {

    private static final Logger LOG = Logger.getLogger("dev.blocknode.rpc");

    /** The request number, for the service to put into its log context (see LogContext). */
    public static final Context.Key<Long> REQUEST_ID = Context.key("blocknode-request-id");

    private final AtomicLong requests = new AtomicLong();

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
                                                       ServerCallHandler<Q, A> next) {
        String method = call.getMethodDescriptor().getBareMethodName();
        long id = requests.incrementAndGet();
        long start = System.nanoTime();
        // Asked periodically (kubelet's probes, stats and health periods): a plain answer is FINE, not INFO.
        boolean chatty = method.equals("Probe") || method.equals("NodeGetVolumeStats")
                || method.equals("NodeGetVolumeHealth") || method.equals("NodeGetStorageHealth")
                || method.equals("NodeGetCapabilities") || method.equals("GetPluginInfo");
        ServerCall<Q, A> logged = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                long micros = (System.nanoTime() - start) / 1000;
                String outcome = LogContext.takeOutcome().map(done -> ": " + done).orElse("");
                // What a call did is said at INFO at least, even for a method whose plain line is FINE.
                Level level = !status.isOk() && status.getCode() != Status.Code.ABORTED ? Level.WARNING
                        : chatty && outcome.isEmpty() ? Level.FINE : Level.INFO;
                if (LOG.isLoggable(level)) {
                    LOG.log(level, method + " #" + id + " " + status.getCode()
                            + (status.getDescription() == null ? "" : " (" + status.getDescription() + ")")
                            + " in " + micros + " us" + outcome);
                }
                super.close(status, trailers);
            }
        };
        return Contexts.interceptCall(Context.current().withValue(REQUEST_ID, id), logged, headers, next);
    }
}
