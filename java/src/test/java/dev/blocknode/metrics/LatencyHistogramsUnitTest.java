package dev.blocknode.metrics;

import dev.blocknode.csi.server.MetricsInterceptor;
import dev.blocknode.testing.InertServerCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.Status;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The bucket boundaries of the two latency histograms, as a scrape shows them. Each boundary is a series on
 * every (method, code) and (phase, outcome) pair of every node (docs/design/scale.md), and the dashboard's
 * quantiles are read from them: a change to them is a change to what a fleet stores, made on purpose.
 */
class LatencyHistogramsUnitTest {

    private static final List<String> BOUNDARIES = List.of("0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
            "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "30.0", "60.0", "120.0", "+Inf");

    @Test
    void aCsiCallIsCountedInTheChosenBuckets() {
        PrometheusMeterRegistry registry = MetricsEndpoint.newRegistry();
        ServerCall.Listener<String> listener = new MetricsInterceptor(registry).interceptCall(
                new InertServerCall(MethodDescriptor.MethodType.UNARY, "csi.v1.Node/NodeStageVolume"), new Metadata(), (call, headers) -> {
                    call.close(Status.OK, new Metadata());
                    return new ServerCall.Listener<>() { };
                });
        listener.onComplete();

        assertEquals(BOUNDARIES, boundaries(registry.scrape(), "blocknode_rpc_seconds_bucket",
                "method=\"NodeStageVolume\""));
    }

    @Test
    void aPhaseIsCountedInTheChosenBuckets() {
        PrometheusMeterRegistry registry = MetricsEndpoint.newRegistry();
        Metrics.globalRegistry.add(registry);
        try {
            Phases.run("bucket-test", () -> { });
        } finally {
            Metrics.globalRegistry.remove(registry);
        }

        assertEquals(BOUNDARIES, boundaries(registry.scrape(), "blocknode_phase_seconds_bucket",
                "phase=\"bucket-test\""));
    }

    /** The le values of one histogram's buckets whose label set contains {@code label}, in scrape order. */
    private static List<String> boundaries(String scrape, String bucket, String label) {
        Pattern le = Pattern.compile("le=\"([^\"]*)\"");
        return scrape.lines().filter(l -> l.startsWith(bucket + "{") && l.contains(label)).map(l -> {
            Matcher m = le.matcher(l);
            return m.find() ? m.group(1) : "(no le in " + l + ")";
        }).toList();
    }
}
