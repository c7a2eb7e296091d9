package dev.blocknode.csi.server;

import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.util.concurrent.atomic.AtomicInteger;

/** Records every RPC's latency by method and status code, and how many are running. */
public final class MetricsInterceptor implements ServerInterceptor {

    private final MeterRegistry registry;
    private final AtomicInteger inFlight = new AtomicInteger();

    public MetricsInterceptor(MeterRegistry registry) {
        this.registry = registry;
        registry.gauge("blocknode_rpc_in_flight", inFlight);
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
                sample.stop(Timer.builder("blocknode_rpc")
                        .description("CSI calls served, by method and gRPC status code")
                        .tag("method", method)
                        .tag("code", status.getCode().name())
                        .publishPercentileHistogram()
                        .register(registry));
                super.close(status, trailers);
            }
        }, headers);
    }
}
