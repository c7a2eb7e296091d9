package dev.blocknode.metrics;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/** Prometheus text exposition at http://ADDRESS/metrics, served by the JDK's small HTTP server. */
public final class MetricsEndpoint implements AutoCloseable {

    private final PrometheusMeterRegistry registry;
    private final HttpServer server;

    private MetricsEndpoint(PrometheusMeterRegistry registry, HttpServer server) {
        this.registry = registry;
        this.server = server;
    }

    public static PrometheusMeterRegistry newRegistry() {
        return new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    }

    /** @param address host:port; port 0 picks a free one (see {@link #port()}) */
    public static MetricsEndpoint start(String address, PrometheusMeterRegistry registry) throws IOException {
        return start(address, registry, () -> { });
    }

    /**
     * @param beforeScrape brings gauges whose label sets change (one row per volume) up to date; runs on the
     *                     endpoint's single thread, so never concurrently with itself
     */
    public static MetricsEndpoint start(String address, PrometheusMeterRegistry registry, Runnable beforeScrape)
            throws IOException {
        int colon = address.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException("--metrics-address must be host:port, got \"" + address + "\"");
        }
        String host = address.substring(0, colon);
        int port = Integer.parseInt(address.substring(colon + 1));
        InetSocketAddress bind = host.isEmpty() ? new InetSocketAddress(port) : new InetSocketAddress(host, port);
        HttpServer server = HttpServer.create(bind, 16);
        server.createContext("/metrics", exchange -> {
            beforeScrape.run();
            byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "metrics-http");
            t.setDaemon(true);
            return t;
        }));
        server.start();
        return new MetricsEndpoint(registry, server);
    }

    public int port() {
        return server.getAddress().getPort();
    }

    public String url() {
        return "http://" + server.getAddress().getHostString() + ":" + port() + "/metrics";
    }

    public PrometheusMeterRegistry registry() {
        return registry;
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
