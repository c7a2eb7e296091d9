package dev.blocknode;

import dev.blocknode.config.PluginConfig;
import dev.blocknode.csi.ControllerService;
import dev.blocknode.csi.IdentityService;
import dev.blocknode.csi.server.LoggingInterceptor;
import dev.blocknode.csi.server.MetricsInterceptor;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.metrics.MetricsEndpoint;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * {@code --mode controller}: the Identity and Controller services on the socket the external-attacher talks
 * to. It holds no state and touches no host resource (no kubelet root, state dir, device or transport), so
 * it is healthy whenever it answers.
 */
public final class ControllerPlugin implements AutoCloseable {

    private final UnixSocketServer server;
    private final Optional<MetricsEndpoint> metrics;

    private ControllerPlugin(UnixSocketServer server, Optional<MetricsEndpoint> metrics) {
        this.server = server;
        this.metrics = metrics;
    }

    public static ControllerPlugin start(PluginConfig config) throws IOException {
        PrometheusMeterRegistry registry = MetricsEndpoint.newRegistry();
        Optional<MetricsEndpoint> metrics = Optional.empty();
        if (config.metricsAddress().isPresent()) {
            metrics = Optional.of(MetricsEndpoint.start(config.metricsAddress().get(), registry));
        }
        try {
            UnixSocketServer server = UnixSocketServer.start(config.socket(), config.socketMode(),
                    config.socketGroup(),
                    List.of(new IdentityService(config.driverName(), Version.current(),
                                    IdentityService.CONTROLLER_PLUGIN, List::of),
                            new ControllerService()),
                    List.of(new MetricsInterceptor(registry), new LoggingInterceptor()),
                    Stream.of(IdentityService.ANSWERED_FROM_MEMORY, ControllerService.ANSWERED_FROM_MEMORY)
                            .flatMap(Set::stream).collect(Collectors.toUnmodifiableSet()));
            return new ControllerPlugin(server, metrics);
        } catch (IOException | RuntimeException e) {
            metrics.ifPresent(MetricsEndpoint::close);
            throw e;
        }
    }

    public UnixSocketServer server() {
        return server;
    }

    public Optional<MetricsEndpoint> metrics() {
        return metrics;
    }

    public void shutdown(Duration grace) {
        server.shutdown(grace);
        metrics.ifPresent(MetricsEndpoint::close);
    }

    @Override
    public void close() {
        shutdown(Duration.ofSeconds(5));
    }
}
