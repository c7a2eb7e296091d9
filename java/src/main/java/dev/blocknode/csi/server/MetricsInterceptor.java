package dev.blocknode.csi.server;

import dev.blocknode.metrics.LatencyBuckets;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** Records every RPC's latency by method and status code, and how many are running. */
public final class MetricsInterceptor implements ServerInterceptor {

    private final MeterRegistry registry;
    private final AtomicInteger inFlight = new AtomicInteger();
    /**
     * Timers by method, then by status code ordinal. Building and registering a timer looks it up by name
     * and sorted tags in the registry, a cost every call paid; the set of timers is small and fixed.
     */
    private final Map<String, Timer[]> timers = new ConcurrentHashMap<>();

    public MetricsInterceptor(MeterRegistry registry) {
        this.registry = registry;
        Gauge.builder("blocknode_rpc_in_flight", inFlight, AtomicInteger::get)
                .description("CSI calls running now (kubelet's retries pile up here when the node is slow)")
                .register(registry);
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
                                                       ServerCallHandler<Q, A> next) {
        String method = call.getMethodDescriptor().getBareMethodName();
        Timer.Sample sample = Timer.start(registry);
        inFlight.incrementAndGet();
        return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                inFlight.decrementAndGet();
                sample.stop(timer(method, status.getCode()));
                super.close(status, trailers);
            }
        }, headers);
    }

    /** The timer of one method and code, registered on first use and then taken from {@link #timers}. */
    private Timer timer(String method, Status.Code code) {
        Timer[] byCode = timers.computeIfAbsent(method, m -> new Timer[Status.Code.values().length]);
        Timer timer = byCode[code.ordinal()];
        if (timer == null) {
            // Registering is idempotent, so two calls racing here end up with the same timer.
            timer = LatencyBuckets.on(Timer.builder("blocknode_rpc"))
                    .description("CSI calls served, by method and gRPC status code")
                    .tag("method", method)
                    .tag("code", code.name())
                    .register(registry);
            byCode[code.ordinal()] = timer;
        }
        return timer;
    }
}
