package dev.blocknode.bench;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.client.UnixSocketChannels;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.ProbeResponse;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The plugin as a separate process, started the way its container starts it (java FLAGS -jar blocknode.jar
 * with the DaemonSet's arguments, on private paths under one directory), with its pid recorded for the
 * harness's cleanup trap.
 */
final class PluginProcess implements AutoCloseable {

    static final String DRIVER = "block.csi.blocknode.dev";
    /** The GC log a plugin writes into its directory when started with {@link #gcLogFlag}. */
    static final String GC_LOG = "gc.log";

    final String name;
    final Path dir;
    final Path socket;
    final Path kubelet;
    final Path state;
    final Path log;
    final int metricsPort;
    final Process process;
    final long startNanos;
    /** Wall clock at the exec, to place the plugin's log timestamps (millisecond resolution). */
    final long startEpochMillis;
    private CsiClient client;
    /** Nanoseconds from the exec to the first accepted connection on the socket (-1 before). */
    long acceptingNanos = -1;

    private PluginProcess(String name, Path dir, Path state, int metricsPort, Process process, long startNanos,
                          long startEpochMillis) {
        this.startEpochMillis = startEpochMillis;
        this.name = name;
        this.dir = dir;
        this.socket = dir.resolve("csi.sock");
        this.kubelet = dir.resolve("kubelet");
        this.state = state;
        this.log = dir.resolve("plugin.log");
        this.metricsPort = metricsPort;
        this.process = process;
        this.startNanos = startNanos;
    }

    /**
     * Starts the plugin. The clock for {@link #awaitProbeReady} starts right before the exec.
     *
     * @param state the --state-dir (null: DIR/state)
     */
    static PluginProcess start(String name, List<String> jvmFlags, Path dir, Path state, BenchOptions options)
            throws IOException {
        Files.createDirectories(dir.resolve("kubelet"));
        Path stateDir = state != null ? state : dir.resolve("state");
        Files.createDirectories(stateDir);
        int port = freePort();
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmFlags);
        command.addAll(List.of("-jar", options.jar().toString(),
                "--endpoint=unix://" + dir.resolve("csi.sock"),
                "--node-id=bench-node",
                "--driver-name=" + DRIVER,
                "--kubelet-root=" + dir.resolve("kubelet"),
                "--state-dir=" + stateDir,
                "--metrics-address=127.0.0.1:" + port,
                "--log-format=json",
                "--shutdown-grace=10s"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("plugin.log").toFile()));
        long startMillis = System.currentTimeMillis();
        long start = System.nanoTime();
        Process process = builder.start();
        Files.writeString(options.pidFile(), process.pid() + "\n", StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        return new PluginProcess(name, dir, stateDir, port, process, start, startMillis);
    }

    /**
     * Nanoseconds from the exec to the first successful Probe over the socket: the socket file is polled
     * every millisecond, then a raw connect (so the gRPC channel never enters its reconnect backoff), then
     * Probe on a fresh channel, retried until it answers ready.
     */
    long awaitProbeReady(EventLoopGroup eventLoops, Duration timeout) throws IOException, InterruptedException {
        long deadline = startNanos + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("plugin " + name + " exited with " + process.exitValue() + " before it was "
                        + "ready; its log: " + log + "\n" + tail());
            }
            if (Files.exists(socket) && answers()) {
                if (acceptingNanos < 0) {
                    acceptingNanos = System.nanoTime() - startNanos;
                }
                ManagedChannel channel = UnixSocketChannels.connect(socket, eventLoops);
                try {
                    ProbeResponse answer = IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
                            .probe(ProbeRequest.getDefaultInstance());
                    long ready = System.nanoTime() - startNanos;
                    if (answer.getReady().getValue()) {
                        return ready;
                    }
                } catch (StatusRuntimeException notYet) {
                    // not serving yet, or not healthy yet: try again
                } finally {
                    channel.shutdownNow();
                }
            }
            Thread.sleep(1);
        }
        throw new IOException("plugin " + name + " did not answer Probe within " + timeout + "; its log: " + log
                + "\n" + tail());
    }

    /**
     * -Xlog:gc into DIR/gc.log, each line stamped with System.nanoTime's clock (which the bench shares), so that
     * a GC pause can be placed among the calls the bench timed. A line per collection: no cost on a call.
     */
    static String gcLogFlag(Path dir) {
        return "-Xlog:gc:file=" + dir.resolve(GC_LOG) + ":timenanos";
    }

    /** One Probe on a new channel (connect, HTTP/2 handshake, the call): what a fresh client pays. */
    long freshChannelProbe(EventLoopGroup eventLoops) {
        long t = System.nanoTime();
        ManagedChannel channel = UnixSocketChannels.connect(socket, eventLoops);
        try {
            IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
                    .probe(ProbeRequest.getDefaultInstance());
            return System.nanoTime() - t;
        } finally {
            channel.shutdownNow();
        }
    }

    private boolean answers() {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            return channel.connect(UnixDomainSocketAddress.of(socket));
        } catch (IOException refused) {
            return false;
        }
    }

    CsiClient client() {
        if (client == null) {
            client = new CsiClient(socket);
        }
        return client;
    }

    /** VmRSS, VmHWM, ... in KiB, from /proc/PID/status. */
    long statusKib(String field) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
            if (line.startsWith(field + ":")) {
                return Long.parseLong(line.substring(field.length() + 1).replace("kB", "").strip());
            }
        }
        throw new IOException("no " + field + " in /proc/" + process.pid() + "/status");
    }

    /** CPU time (user + system, all threads, living and dead) of the process so far, from /proc/PID/stat. */
    long cpuNanos() throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        // after "pid (comm) ": state is field 3, so utime (14) and stime (15) are at 11 and 12
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * (1_000_000_000L / CLOCK_TICKS);
    }

    private static final long CLOCK_TICKS = clockTicks();

    private static long clockTicks() {
        try {
            return Long.parseLong(Volumes.runCommand(List.of("getconf", "CLK_TCK")).get(0).strip());
        } catch (IOException | RuntimeException e) {
            return 100;
        }
    }

    /** Resets VmHWM to the current RSS (clear_refs 5, Linux >= 4.0). */
    void resetPeakRss() throws IOException {
        Files.writeString(Path.of("/proc", Long.toString(process.pid()), "clear_refs"), "5");
    }

    /** The Prometheus exposition from --metrics-address. */
    String scrape() throws IOException, InterruptedException {
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + metricsPort + "/metrics")).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IOException("GET /metrics answered " + response.statusCode());
            }
            return response.body();
        }
    }

    /**
     * Milliseconds from the exec to the first log line containing {@code text} (the JSON log's "time"), or -1.
     */
    long loggedAfterStart(String text) throws IOException {
        for (String line : Files.readAllLines(log)) {
            int at = line.indexOf("\"time\":\"");
            if (line.contains(text) && at >= 0) {
                String time = line.substring(at + 8, line.indexOf('"', at + 8));
                return java.time.Instant.parse(time).toEpochMilli() - startEpochMillis;
            }
        }
        return -1;
    }

    String tail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** SIGTERM, then up to 20 s for the plugin to stop (it unbinds its socket and exits). */
    @Override
    public void close() {
        if (client != null) {
            client.close();
            client = null;
        }
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                System.err.println("bench: plugin " + name + " ignored SIGTERM for 20 s; killing it");
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
