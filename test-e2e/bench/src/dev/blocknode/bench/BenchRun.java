package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;
import dev.blocknode.csi.v1.GetPluginInfoRequest;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.csi.v1.ProbeRequest;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What every figure of one bench run shares: its settings, volumes, report, the plugins it started (stopped
 * by {@link #cleanup}) and the client's event loop; and the measurements more than one figure makes.
 */
final class BenchRun {

    static final long MIB = 1024 * 1024;
    static final ProbeRequest PROBE = ProbeRequest.getDefaultInstance();
    static final GetPluginInfoRequest INFO = GetPluginInfoRequest.getDefaultInstance();

    final BenchOptions o;
    final Volumes volumes;
    final Report report = new Report();
    final int cores = Runtime.getRuntime().availableProcessors();
    final List<PluginProcess> plugins = new ArrayList<>();
    final EventLoopGroup eventLoops = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());

    BenchRun(BenchOptions o) throws IOException {
        this.o = o;
        this.volumes = new Volumes(o.work().resolve("images"), o.helper());
    }

    PluginProcess startPlugin(String name, List<String> flags, Path state) throws Exception {
        PluginProcess p = PluginProcess.start(name, flags, o.work().resolve(name), state, o);
        plugins.add(p);
        p.awaitProbeReady(eventLoops, Duration.ofSeconds(60));
        return p;
    }

    static long probePair(IdentityGrpc.IdentityBlockingStub identity) {
        long t = System.nanoTime();
        identity.probe(PROBE);
        identity.probe(PROBE);
        return System.nanoTime() - t;
    }

    static long infoPair(IdentityGrpc.IdentityBlockingStub identity) {
        long t = System.nanoTime();
        identity.getPluginInfo(INFO);
        identity.getPluginInfo(INFO);
        return System.nanoTime() - t;
    }

    static long cycle(NodeGrpc.NodeBlockingStub node, Volume v, Samples publish, Samples unpublish) {
        long t0 = System.nanoTime();
        node.nodePublishVolume(v.publish);
        long t1 = System.nanoTime();
        node.nodeUnpublishVolume(v.unpublish);
        long t2 = System.nanoTime();
        if (publish != null) {
            publish.add(t1 - t0);
            unpublish.add(t2 - t1);
        }
        return t2 - t0;
    }

    Samples rawPairs(Path source, Path target, int n, boolean mkdir) throws IOException {
        List<String> args = new ArrayList<>(List.of("rawbind", source.toString(), target.toString(),
                Integer.toString(n), "5"));
        if (mkdir) {
            args.add("mkdir");
        }
        Samples s = new Samples();
        for (String line : volumes.run(args)) {
            s.add(Long.parseLong(line.strip()));
        }
        return s;
    }

    /**
     * With --profile-dir: a JFR recording of the plugin over the measured window: settings=profile with 1 ms
     * execution samples, plus JDK 25's CPU-time sampler (jdk.CPUTimeSample, which also sees time in syscalls).
     */
    void profileStart(PluginProcess p) throws IOException {
        if (o.profileDir() != null) {
            Volumes.runCommand(List.of(jdkTool("jcmd"), Long.toString(p.process.pid()), "JFR.start", "name=bench",
                    "settings=profile", "method-profiling=max", "jdk.CPUTimeSample#enabled=true",
                    "jdk.CPUTimeSample#throttle=1ms"));
        }
    }

    void profileStop(PluginProcess p, String name) throws IOException {
        if (o.profileDir() == null) {
            return;
        }
        Files.createDirectories(o.profileDir());
        Path file = o.profileDir().resolve(name + ".jfr");
        Files.deleteIfExists(file);
        Volumes.runCommand(List.of(jdkTool("jcmd"), Long.toString(p.process.pid()), "JFR.stop", "name=bench",
                "filename=" + file));
        report.note("PROFILED RUN: JFR (settings=profile) recorded the plugin during the measured window of " + name
                + ": " + file + " (the recording's overhead is in this run's figures)");
        for (String line : ProfileSummary.summarize(file, 14)) {
            report.diag("profile " + name + ": " + line);
        }
    }

    private static String jdkTool(String name) {
        return Path.of(System.getProperty("java.home"), "bin", name).toString();
    }

    private static final Pattern METRIC = Pattern.compile("^blocknode_rpc_seconds_(sum|count)\\{([^}]*)} (\\S+)");

    /** Mean server-side nanoseconds of the OK calls of {@code method} between two scrapes. */
    static double serverMean(String before, String after, String method) {
        double[] b = histogram(before, method);
        double[] a = histogram(after, method);
        return (a[0] - b[0]) / (a[1] - b[1]) * 1e9;
    }

    /** sum and count of blocknode_rpc_seconds{method=M,code=OK}. */
    static double[] histogram(String exposition, String method) {
        double[] sc = new double[2];
        for (String line : exposition.split("\n")) {
            Matcher m = METRIC.matcher(line);
            if (m.find() && m.group(2).contains("method=\"" + method + "\"") && m.group(2).contains("code=\"OK\"")) {
                sc[m.group(1).equals("sum") ? 0 : 1] = Double.parseDouble(m.group(3));
            }
        }
        return sc;
    }

    /** Stops every plugin this run started; mounts and loop devices left by a failure are the trap's. */
    void cleanup() {
        for (PluginProcess p : plugins) {
            p.close();
        }
        eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    static void log(String message) {
        System.err.println("bench: " + message);
    }
}
