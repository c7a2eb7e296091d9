package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;
import dev.blocknode.csi.v1.GetPluginInfoRequest;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.csi.v1.ProbeRequest;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.stream.Stream;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * blocknode's benchmark (figures a-f of test-e2e/bench/README.md). Every figure is a ratio to a baseline
 * measured in the same run, interleaved with it where the two can alternate, so that a noisy shared
 * machine moves both; absolute values are printed for the record. Run by bench.sh, which builds the
 * pieces, owns the work directory and cleans up after any exit.
 */
public final class Bench {

    record Options(Path jar, Path work, Path helper, Path jvmArgs, Path aotCache, Path results, Path pidFile,
                   Path classes, int cycles, int rounds, int clutter, int burst, int statsVolumes, int sweeps,
                   int startTrials, long idleSettleMillis, String figures, List<String> p1ExtraFlags, Path profileDir) {

        static Options parse(String[] args) {
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i + 1 < args.length; i += 2) {
                if (!args[i].startsWith("--")) {
                    throw new IllegalArgumentException("expected --flag value, got " + args[i]);
                }
                m.put(args[i].substring(2), args[i + 1]);
            }
            String aot = m.getOrDefault("aot-cache", "");
            return new Options(Path.of(req(m, "jar")), Path.of(req(m, "work")), Path.of(req(m, "helper")),
                    Path.of(req(m, "jvm-args")), aot.isEmpty() ? null : Path.of(aot), Path.of(req(m, "results")),
                    Path.of(req(m, "pid-file")), Path.of(req(m, "classes")),
                    Integer.parseInt(m.getOrDefault("cycles", "400")),
                    Integer.parseInt(m.getOrDefault("rounds", "8")),
                    Integer.parseInt(m.getOrDefault("clutter", "3000")),
                    Integer.parseInt(m.getOrDefault("burst", "100")),
                    Integer.parseInt(m.getOrDefault("stats-volumes", "1000")),
                    Integer.parseInt(m.getOrDefault("sweeps", "5")),
                    Integer.parseInt(m.getOrDefault("start-trials", "5")),
                    Long.parseLong(m.getOrDefault("idle-settle-ms", "2000")),
                    m.getOrDefault("figures", "abcdef"),
                    m.getOrDefault("p1-extra-flags", "").isBlank() ? List.of()
                            : List.of(m.get("p1-extra-flags").strip().split("\\s+")),
                    m.getOrDefault("profile-dir", "").isBlank() ? null : Path.of(m.get("profile-dir")));
        }

        boolean has(char figure) {
            return figures.indexOf(figure) >= 0;
        }

        private static String req(Map<String, String> m, String key) {
            String v = m.get(key);
            if (v == null) {
                throw new IllegalArgumentException("--" + key + " is required");
            }
            return v;
        }
    }

    private static final long MIB = 1024 * 1024;
    private static final ProbeRequest PROBE = ProbeRequest.getDefaultInstance();
    private static final GetPluginInfoRequest INFO = GetPluginInfoRequest.getDefaultInstance();

    private final Options o;
    private final Volumes volumes;
    private final Report report = new Report();
    private final int cores = Runtime.getRuntime().availableProcessors();
    private final List<PluginProcess> plugins = new ArrayList<>();
    private final EventLoopGroup eventLoops = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());

    private Bench(Options o) throws IOException {
        this.o = o;
        this.volumes = new Volumes(o.work().resolve("images"), o.helper());
    }

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args);
        Bench bench = new Bench(options);
        int rc = bench.run();
        System.exit(rc);
    }

    private int run() throws Exception {
        String loadBefore = Files.readString(Path.of("/proc/loadavg")).strip();
        long started = System.nanoTime();
        boolean ok = false;
        try {
            List<String> image = imageFlags();
            String imageName = o.aotCache() != null ? "image flags (deploy/jvm.args + AOT cache)"
                    : "deploy/jvm.args (no AOT cache: JDK < 25)";
            report.note("Plugin under test for a-d: " + imageName + ", --log-format=json to a file, "
                    + "--metrics-address on loopback, state and kubelet dirs on the root disk (" + fsOf(o.work()) + ").");

            if (!o.figures().equals("abcdef")) {
                report.note("A PARTIAL RUN: figures " + o.figures() + " only (BENCH_FIGURES)");
            }
            Path tmpfs = o.work().resolve("tmpfs");
            Files.createDirectories(tmpfs);
            Volumes.runCommand(List.of("mount", "-t", "tmpfs", "-o", "size=64m,mode=700", "bench-state", tmpfs.toString()));
            try {
                List<String> p1Flags = new ArrayList<>(image);
                p1Flags.addAll(o.p1ExtraFlags());
                if (!o.p1ExtraFlags().isEmpty()) {
                    report.note("EXTRA FLAGS for the plugin of a-d (not the image's): " + o.p1ExtraFlags());
                }
                PluginProcess main = startPlugin("p1", p1Flags, null);
                Volume a = null;
                if (o.has('a')) {
                    PluginProcess onTmpfs = startPlugin("p1t", image, tmpfs.resolve("p1t-state"));
                    a = figureA(main, onTmpfs);
                    onTmpfs.close();
                }
                if (o.has('b')) {
                    if (a == null) {
                        a = volumes.create(main, "a", 1, 16 * MIB).get(0);
                        main.client().node().nodeStageVolume(a.stage);
                    }
                    figureB(main, a);
                }
                if (a != null) {
                    Volumes.teardown(main.client().node(), List.of(a), 1);
                    volumes.destroy(List.of(a));
                }
                Burst imageBurst = o.has('c') ? figureC(main, "image flags") : null;
                if (o.has('d')) {
                    figureD(main);
                }
                main.close();
                if (o.has('e')) {
                    Burst defaultBurst = null;
                    if (imageBurst != null) {
                        PluginProcess defaults = startPlugin("p2", List.of(), null);
                        defaultBurst = burst(defaults, "default flags");
                        defaults.close();
                    }
                    figureE(image, imageBurst, defaultBurst);
                }
                if (o.has('f')) {
                    figureF();
                }
                if (o.has('a')) {
                    flagsExperiment(image);
                    diagnostics(tmpfs);
                }
            } finally {
                for (PluginProcess p : plugins) {
                    p.close();
                }
                try {
                    Volumes.runCommand(List.of("umount", tmpfs.toString()));
                } catch (IOException e) {
                    log("cannot unmount " + tmpfs + " (the trap will): " + e.getMessage());
                }
            }
            ok = true;
        } catch (Exception | Error e) {
            report.note("THE RUN FAILED: " + e);
            e.printStackTrace();
        } finally {
            cleanup();
            String loadAfter = Files.readString(Path.of("/proc/loadavg")).strip();
            report.machine(o, cores, loadBefore, loadAfter, (System.nanoTime() - started) / 1e9);
            String text = report.render();
            Files.createDirectories(o.results().getParent());
            Files.writeString(o.results(), text, StandardCharsets.UTF_8);
            System.out.println(text);
        }
        return ok ? 0 : 1;
    }

    private List<String> imageFlags() {
        List<String> flags = new ArrayList<>();
        flags.add("@" + o.jvmArgs());
        if (o.aotCache() != null) {
            flags.add("-XX:AOTCache=" + o.aotCache());
        }
        return flags;
    }

    private PluginProcess startPlugin(String name, List<String> flags, Path state) throws Exception {
        PluginProcess p = PluginProcess.start(name, flags, o.work().resolve(name), state, o);
        plugins.add(p);
        p.awaitProbeReady(eventLoops, Duration.ofSeconds(60));
        return p;
    }

    // ------------------------------------------------------------------------------------------------ (a)

    private static long probePair(IdentityGrpc.IdentityBlockingStub identity) {
        long t = System.nanoTime();
        identity.probe(PROBE);
        identity.probe(PROBE);
        return System.nanoTime() - t;
    }

    private static long infoPair(IdentityGrpc.IdentityBlockingStub identity) {
        long t = System.nanoTime();
        identity.getPluginInfo(INFO);
        identity.getPluginInfo(INFO);
        return System.nanoTime() - t;
    }

    private static long cycle(NodeGrpc.NodeBlockingStub node, Volume v, Samples publish, Samples unpublish) {
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

    private Samples rawPairs(Path source, Path target, int n, boolean mkdir) throws IOException {
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

    private Volume figureA(PluginProcess p, PluginProcess pt) throws Exception {
        log("(a) publish+unpublish cycle vs Probe+Probe and the raw bind pair");
        Volume a = volumes.create(p, "a", 1, 16 * MIB).get(0);
        Volume at = volumes.create(pt, "a", 1, 16 * MIB).get(0);
        NodeGrpc.NodeBlockingStub node = p.client().node();
        IdentityGrpc.IdentityBlockingStub identity = p.client().identity();
        NodeGrpc.NodeBlockingStub nodeT = pt.client().node();
        node.nodeStageVolume(a.stage);
        nodeT.nodeStageVolume(at.stage);

        // The record as it is while published: the input of the record-store diagnostics.
        node.nodePublishVolume(a.publish);
        try (Stream<Path> files = Files.walk(p.state)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) { // staging record + publications journal
                Path copy = o.work().resolve("record").resolve(p.state.relativize(f));
                Files.createDirectories(copy.getParent());
                Files.copy(f, copy);
            }
        }
        node.nodeUnpublishVolume(a.unpublish);

        // The raw pair binds the same staging mount onto a target of the same shape as kubelet's.
        Path rawParent = p.kubelet.resolve("pods/pod-raw/volumes/kubernetes.io~csi/a");
        Path rawTarget = rawParent.resolve("mount");
        Files.createDirectories(rawTarget);
        Path rawMkdirTarget = rawParent.resolve("mount-mkdir");

        for (int i = 0; i < 2000; i++) {
            probePair(identity);
            infoPair(identity);
        }
        for (int i = 0; i < 1000; i++) {
            cycle(node, a, null, null);
            cycle(nodeT, at, null, null);
        }
        Samples probes = new Samples();
        Samples infos = new Samples();
        Samples cycles = new Samples();
        Samples publish = new Samples();
        Samples unpublish = new Samples();
        Samples cyclesTmpfs = new Samples();
        Samples raw = new Samples();
        Samples rawMkdir = new Samples();
        int k = Math.max(1, o.cycles() / o.rounds());
        long cpuProbes = 0;
        long cpuCycles = 0;
        String before = p.scrape();
        profileStart(p);
        for (int r = 0; r < o.rounds(); r++) {
            long c0 = p.cpuNanos();
            for (int i = 0; i < k; i++) {
                probes.add(probePair(identity));
            }
            long c1 = p.cpuNanos();
            for (int i = 0; i < k; i++) {
                cycles.add(cycle(node, a, publish, unpublish));
            }
            long c2 = p.cpuNanos();
            cpuProbes += c1 - c0;
            cpuCycles += c2 - c1;
            raw.addAll(rawPairs(a.staging, rawTarget, k, false));
            for (int i = 0; i < k; i++) {
                cyclesTmpfs.add(cycle(nodeT, at, null, null));
            }
            rawMkdir.addAll(rawPairs(a.staging, rawMkdirTarget, k, true));
            for (int i = 0; i < k; i++) {
                infos.add(infoPair(identity));
            }
        }
        profileStop(p, "a-cycles");
        String after = p.scrape();
        Volumes.teardown(nodeT, List.of(at), 1);
        volumes.destroy(List.of(at));

        double base50 = probes.median() + raw.median();
        double base90 = probes.p90() + raw.p90();
        double r50 = cycles.median() / base50;
        double r90 = cycles.p90() / base90;
        report.row("a", "publish+unpublish cycle over the socket, median", Samples.fmt(cycles.median()),
                "Probe+Probe " + Samples.fmt(probes.median()) + " + raw pair " + Samples.fmt(raw.median()),
                r50, "<= 2x", r50 <= 2, r50 / 2);
        report.row("a", "publish+unpublish cycle over the socket, p90", Samples.fmt(cycles.p90()),
                "Probe+Probe " + Samples.fmt(probes.p90()) + " + raw pair " + Samples.fmt(raw.p90()),
                r90, "<= 2x", r90 <= 2, r90 / 2);
        report.detail("a", "cycle (NodePublishVolume + NodeUnpublishVolume): " + cycles.summary());
        report.detail("a", "  of which NodePublishVolume: " + publish.summary());
        report.detail("a", "  of which NodeUnpublishVolume: " + unpublish.summary());
        report.detail("a", "Probe + Probe: " + probes.summary());
        report.detail("a", "GetPluginInfo + GetPluginInfo (no health check): " + infos.summary());
        report.detail("a", "raw pair mount(MS_BIND) + umount2, C: " + raw.summary());
        report.detail("a", "raw pair with mkdir + rmdir of the target, C: " + rawMkdir.summary());
        report.detail("a", "rounds: " + o.rounds() + " x " + k + " of each, interleaved, after 2,000 Probe pairs, "
                + "2,000 GetPluginInfo pairs and 1,000 cycles of warm-up");
        report.diag("cycle with --state-dir on tmpfs (fsync nearly free), same flags, interleaved: "
                + cyclesTmpfs.summary() + "; on disk / on tmpfs = "
                + Samples.ratio((double) cycles.median() / cyclesTmpfs.median()) + " (median); the goal's ratio with"
                + " the state dir on tmpfs would be " + Samples.ratio(cyclesTmpfs.median() / base50));
        report.diag("the plugin's CPU time (utime+stime from /proc/PID/stat) per cycle: "
                + Samples.fmt((double) cpuCycles / cycles.size()) + " of " + Samples.fmt(cycles.median())
                + " wall (median); per Probe pair: " + Samples.fmt((double) cpuProbes / probes.size()) + " of "
                + Samples.fmt(probes.median()) + " wall");
        report.diag("cycle minus (Probe pair + raw pair with mkdir/rmdir), medians: "
                + Samples.fmt(cycles.median() - probes.median() - rawMkdir.median())
                + " = the plugin's own work per cycle beyond two RPCs and the syscalls it must make");
        report.diag("cycle on disk minus cycle on tmpfs, medians: " + Samples.fmt(cycles.median() - cyclesTmpfs.median())
                + " = what the record writes cost per cycle (publications are journaled without fsync)");
        double ratioInfo = (double) cycles.median() / (infos.median() + raw.median());
        report.diag("the goal's ratio against two calls that do nothing (GetPluginInfo, where Probe also checks the"
                + " host's tools) + the raw pair, medians: " + Samples.ratio(ratioInfo));
        double publishServer = serverMean(before, after, "NodePublishVolume");
        double unpublishServer = serverMean(before, after, "NodeUnpublishVolume");
        double probeServer = serverMean(before, after, "Probe");
        double infoServer = serverMean(before, after, "GetPluginInfo");
        report.diag("server-side means (blocknode_rpc_seconds over the measured rounds): NodePublishVolume "
                + Samples.fmt(publishServer) + ", NodeUnpublishVolume " + Samples.fmt(unpublishServer) + ", Probe "
                + Samples.fmt(probeServer) + ", GetPluginInfo " + Samples.fmt(infoServer) + "; the cycle's own work"
                + " beyond two calls that do nothing: " + Samples.fmt(publishServer + unpublishServer - 2 * infoServer)
                + " (of which mkdir + rmdir + the bind pair in C: " + Samples.fmt(rawMkdir.median()) + ")");
        return a;
    }

    /**
     * With --profile-dir: a JFR recording of the plugin over the measured window: settings=profile with 1 ms
     * execution samples, plus JDK 25's CPU-time sampler (jdk.CPUTimeSample, which also sees time in syscalls).
     */
    private void profileStart(PluginProcess p) throws IOException {
        if (o.profileDir() != null) {
            Volumes.runCommand(List.of(jdkTool("jcmd"), Long.toString(p.process.pid()), "JFR.start", "name=bench",
                    "settings=profile", "method-profiling=max", "jdk.CPUTimeSample#enabled=true",
                    "jdk.CPUTimeSample#throttle=1ms"));
        }
    }

    private void profileStop(PluginProcess p, String name) throws IOException {
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

    // ------------------------------------------------------------------------------------------------ (b)

    private static int mountCount() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).size();
    }

    private void figureB(PluginProcess p, Volume a) throws Exception {
        log("(b) the cycle with " + o.clutter() + " unrelated mounts vs without");
        NodeGrpc.NodeBlockingStub node = p.client().node();
        Path clutter = o.work().resolve("clutter");
        Files.createDirectories(clutter);
        Path rawTarget = p.kubelet.resolve("pods/pod-raw/volumes/kubernetes.io~csi/a/mount");
        Samples[] cycles = {new Samples(), new Samples()};
        Samples[] raw = {new Samples(), new Samples()};
        int[] counts = new int[2];
        int perBlock = Math.max(2, o.cycles() / 4);
        boolean cluttered = false;
        try {
            for (int state : new int[] {0, 1, 0, 1, 0, 1, 0, 1}) {
                if (state == 1 && !cluttered) {
                    volumes.run(List.of("clutter-mount", clutter.toString(), Integer.toString(o.clutter())));
                    cluttered = true;
                } else if (state == 0 && cluttered) {
                    volumes.run(List.of("clutter-umount", clutter.toString(), Integer.toString(o.clutter())));
                    cluttered = false;
                }
                counts[state] = mountCount();
                for (int i = 0; i < 30; i++) {
                    cycle(node, a, null, null);
                }
                for (int half = 0; half < 2; half++) {
                    for (int i = 0; i < perBlock / 2; i++) {
                        cycles[state].add(cycle(node, a, null, null));
                    }
                    raw[state].addAll(rawPairs(a.staging, rawTarget, perBlock / 2, false));
                }
            }
        } finally {
            if (cluttered) {
                volumes.run(List.of("clutter-umount", clutter.toString(), Integer.toString(o.clutter())));
            }
        }
        double r50 = (double) cycles[1].median() / cycles[0].median();
        double r90 = (double) cycles[1].p90() / cycles[0].p90();
        String label = String.format(Locale.ROOT, "cycle with %,d mounts on the node vs %d", counts[1], counts[0]);
        report.row("b", label + ", median", Samples.fmt(cycles[1].median()),
                counts[0] + " mounts: " + Samples.fmt(cycles[0].median()), r50, "<= 1.5x", r50 <= 1.5, r50 / 1.5);
        report.row("b", label + ", p90", Samples.fmt(cycles[1].p90()),
                counts[0] + " mounts: " + Samples.fmt(cycles[0].p90()), r90, "<= 1.5x", r90 <= 1.5, r90 / 1.5);
        report.detail("b", "mounts in /proc/self/mountinfo: " + counts[0] + " (the node plus the bench's staging mount"
                + " and tmpfs) vs " + counts[1] + " (plus " + o.clutter() + " tmpfs mounts under the work dir)");
        report.detail("b", "cycle, " + counts[0] + " mounts: " + cycles[0].summary());
        report.detail("b", "cycle, " + counts[1] + " mounts: " + cycles[1].summary());
        report.detail("b", "raw pair, " + counts[0] + " mounts: " + raw[0].summary());
        report.detail("b", "raw pair, " + counts[1] + " mounts: " + raw[1].summary() + "; ratio "
                + Samples.ratio((double) raw[1].median() / raw[0].median()) + " (the kernel's own share of any growth)");
        report.detail("b", "order: few, many, four times over; " + perBlock + " cycles and " + perBlock
                + " raw pairs per block, after 30 cycles of warm-up each");
    }

    // ------------------------------------------------------------------------------------------------ (c)

    record Burst(String flags, long one, long wall, long rssBeforeKib, long hwmKib, long rssAfterKib,
                 Samples perVolume, long teardownWall, int failures) {
    }

    private Burst figureC(PluginProcess p, String flags) throws Exception {
        log("(c) " + o.burst() + " volumes staged+published concurrently vs one");
        Burst b = burst(p, flags);
        double ideal = (double) b.one() * o.burst() / cores;
        double ratio = b.wall() / ideal;
        report.row("c", o.burst() + " volumes staged+published at once (" + o.burst() + " client threads), wall",
                Samples.fmt(b.wall()), String.format(Locale.ROOT, "one volume %s x %d / %d cores = %s",
                        Samples.fmt(b.one()), o.burst(), cores, Samples.fmt(ideal)), ratio, "<= 3x", ratio <= 3,
                ratio / 3);
        report.detail("c", "one volume (blank 16 MiB loop file: blkid probe, mkfs.ext4, mount, publish), median of 10"
                + " (5 before the burst after 1 warm-up, 5 after it): " + Samples.fmt(b.one()));
        report.detail("c", "burst, per volume stage+publish latency: " + b.perVolume().summary());
        report.detail("c", "burst teardown (unpublish+unstage, " + o.burst() + " threads), wall: "
                + Samples.fmt(b.teardownWall()) + "; failed calls: " + b.failures());
        return b;
    }

    /**
     * One volume's stage+publish (median of 10: 1 warm-up and 5 before the burst, 5 after it), and the burst;
     * VmHWM is reset right before the burst.
     */
    private Burst burst(PluginProcess p, String flags) throws Exception {
        NodeGrpc.NodeBlockingStub node = p.client().node();
        Samples one = new Samples();
        singles(p, "one-before", 6, one);
        List<Volume> vs = volumes.create(p, "burst", o.burst(), 16 * MIB);
        Volumes.runCommand(List.of("sync"));
        long rssBefore = p.statusKib("VmRSS");
        p.resetPeakRss();
        ExecutorService pool = Executors.newFixedThreadPool(o.burst());
        CountDownLatch ready = new CountDownLatch(o.burst());
        CountDownLatch go = new CountDownLatch(1);
        List<Future<long[]>> done = new ArrayList<>();
        for (Volume v : vs) {
            done.add(pool.submit(() -> {
                ready.countDown();
                go.await();
                long s = System.nanoTime();
                node.nodeStageVolume(v.stage);
                node.nodePublishVolume(v.publish);
                return new long[] {s, System.nanoTime()};
            }));
        }
        ready.await();
        long t0 = System.nanoTime();
        go.countDown();
        long last = t0;
        Samples perVolume = new Samples();
        Exception failure = null;
        for (Future<long[]> f : done) {
            try {
                long[] se = f.get();
                last = Math.max(last, se[1]);
                perVolume.add(se[1] - se[0]);
            } catch (Exception e) {
                failure = e;
            }
        }
        long wall = last - t0;
        pool.shutdown();
        long hwm = p.statusKib("VmHWM");
        long rssAfter = p.statusKib("VmRSS");
        long td = System.nanoTime();
        int failed = Volumes.teardown(node, vs, o.burst());
        long teardown = System.nanoTime() - td;
        volumes.destroy(vs);
        if (failure != null) {
            throw new IOException("a volume of the burst failed: " + failure.getMessage(), failure);
        }
        singles(p, "one-after", 5, one);
        return new Burst(flags, one.median(), wall, rssBefore, hwm, rssAfter, perVolume, teardown, failed);
    }

    /** Stage + publish of one blank volume at a time, {@code n} times; the first of "one-before" is warm-up. */
    private void singles(PluginProcess p, String prefix, int n, Samples into) throws Exception {
        NodeGrpc.NodeBlockingStub node = p.client().node();
        for (int i = 0; i < n; i++) {
            Volume v = volumes.create(p, prefix + i, 1, 16 * MIB).get(0);
            Volumes.runCommand(List.of("sync"));
            long t0 = System.nanoTime();
            node.nodeStageVolume(v.stage);
            node.nodePublishVolume(v.publish);
            long t = System.nanoTime() - t0;
            if (!(prefix.equals("one-before") && i == 0)) {
                into.add(t);
            }
            Volumes.teardown(node, List.of(v), 1);
            volumes.destroy(List.of(v));
        }
    }

    // ------------------------------------------------------------------------------------------------ (d)

    private static final Pattern METRIC = Pattern.compile("^blocknode_rpc_seconds_(sum|count)\\{([^}]*)} (\\S+)");

    /** Mean server-side nanoseconds of the OK calls of {@code method} between two scrapes. */
    private static double serverMean(String before, String after, String method) {
        double[] b = histogram(before, method);
        double[] a = histogram(after, method);
        return (a[0] - b[0]) / (a[1] - b[1]) * 1e9;
    }

    /** sum and count of blocknode_rpc_seconds{method=M,code=OK}. */
    private static double[] histogram(String exposition, String method) {
        double[] sc = new double[2];
        for (String line : exposition.split("\n")) {
            Matcher m = METRIC.matcher(line);
            if (m.find() && m.group(2).contains("method=\"" + method + "\"") && m.group(2).contains("code=\"OK\"")) {
                sc[m.group(1).equals("sum") ? 0 : 1] = Double.parseDouble(m.group(3));
            }
        }
        return sc;
    }

    private void figureD(PluginProcess p) throws Exception {
        log("(d) NodeGetVolumeStats over " + o.statsVolumes() + " staged volumes");
        NodeGrpc.NodeBlockingStub node = p.client().node();
        IdentityGrpc.IdentityBlockingStub identity = p.client().identity();
        List<Volume> vs = volumes.create(p, "stats", o.statsVolumes(), 4 * MIB);
        long ts = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Future<?>> staged = new ArrayList<>();
        for (Volume v : vs) {
            staged.add(pool.submit(() -> node.nodeStageVolume(v.stage)));
        }
        Exception stageFailure = null;
        for (Future<?> f : staged) {
            try {
                f.get();
            } catch (Exception e) {
                stageFailure = e;
            }
        }
        pool.shutdown();
        long stageWall = System.nanoTime() - ts;
        try {
            if (stageFailure != null) {
                throw new IOException("staging for (d) failed: " + stageFailure.getMessage(), stageFailure);
            }
            Volumes.runCommand(List.of("sync"));
            NodeGetVolumeStatsResponse sample = node.nodeGetVolumeStats(vs.get(0).stats);
            if (sample.getUsageCount() == 0) {
                throw new IOException("NodeGetVolumeStats answered no usage: " + sample);
            }
            Samples statsCalls = new Samples();
            Samples probeCalls = new Samples();
            Samples statsSweeps = new Samples();
            Samples probeSweeps = new Samples();
            Samples infoCalls = new Samples();
            Samples infoSweeps = new Samples();
            for (int w = 0; w < 2; w++) {
                sweep(node, identity, vs, null, STATS);
                sweep(node, identity, vs, null, PROBE_CALL);
                sweep(node, identity, vs, null, INFO_CALL);
            }
            String before = p.scrape();
            profileStart(p);
            long[] cpu = new long[3];
            for (int s = 0; s < o.sweeps(); s++) {
                long c0 = p.cpuNanos();
                statsSweeps.add(sweep(node, identity, vs, statsCalls, STATS));
                long c1 = p.cpuNanos();
                probeSweeps.add(sweep(node, identity, vs, probeCalls, PROBE_CALL));
                long c2 = p.cpuNanos();
                infoSweeps.add(sweep(node, identity, vs, infoCalls, INFO_CALL));
                long c3 = p.cpuNanos();
                cpu[STATS] += c1 - c0;
                cpu[PROBE_CALL] += c2 - c1;
                cpu[INFO_CALL] += c3 - c2;
            }
            report.diag("the plugin's CPU time (utime+stime, all threads) per call during the sweeps: NodeGetVolumeStats "
                    + Samples.fmt((double) cpu[STATS] / statsCalls.size()) + ", Probe "
                    + Samples.fmt((double) cpu[PROBE_CALL] / probeCalls.size()) + ", GetPluginInfo "
                    + Samples.fmt((double) cpu[INFO_CALL] / infoCalls.size())
                    + " (more than the server-side latency where the gRPC transport and thread hand-offs burn CPU"
                    + " outside the timed span)");
            profileStop(p, "d-sweeps");
            String after = p.scrape();
            Samples statsParallel = new Samples();
            Samples probeParallel = new Samples();
            ExecutorService callers = Executors.newFixedThreadPool(8);
            try {
                for (int s = 0; s < 4; s++) {
                    long ws = parallelSweep(callers, 8, node, identity, vs, STATS);
                    long wp = parallelSweep(callers, 8, node, identity, vs, PROBE_CALL);
                    if (s > 0) { // the first of each: warm-up
                        statsParallel.add(ws);
                        probeParallel.add(wp);
                    }
                }
            } finally {
                callers.shutdown();
            }
            double[] s0 = histogram(before, "NodeGetVolumeStats");
            double[] s1 = histogram(after, "NodeGetVolumeStats");
            double[] p0 = histogram(before, "Probe");
            double[] p1 = histogram(after, "Probe");
            double statsCount = s1[1] - s0[1];
            double probeCount = p1[1] - p0[1];
            double[] i0 = histogram(before, "GetPluginInfo");
            double[] i1 = histogram(after, "GetPluginInfo");
            double serverInfo = (i1[0] - i0[0]) / (i1[1] - i0[1]) * 1e9;
            double serverStats = (s1[0] - s0[0]) / statsCount * 1e9;
            double serverProbe = (p1[0] - p0[0]) / probeCount * 1e9;
            report.row("d", "NodeGetVolumeStats, server-side mean (histogram sum/count)", Samples.fmt(serverStats),
                    "Probe server-side mean " + Samples.fmt(serverProbe), serverStats / serverProbe, "<= 50 us",
                    serverStats <= 50_000, serverStats / 50_000);
            report.row("d", "NodeGetVolumeStats, client-side median", Samples.fmt(statsCalls.median()),
                    "Probe " + Samples.fmt(probeCalls.median()),
                    (double) statsCalls.median() / probeCalls.median(), "-", null, 0);
            report.row("d", "NodeGetVolumeStats, client-side p99", Samples.fmt(statsCalls.p99()),
                    "Probe " + Samples.fmt(probeCalls.p99()),
                    (double) statsCalls.p99() / probeCalls.p99(), "-", null, 0);
            report.row("d", String.format(Locale.ROOT, "sweep of %,d NodeGetVolumeStats calls, median of %d",
                            vs.size(), o.sweeps()), Samples.fmt(statsSweeps.median()),
                    String.format(Locale.ROOT, "%,d Probes %s", vs.size(), Samples.fmt(probeSweeps.median())),
                    (double) statsSweeps.median() / probeSweeps.median(), "<= 100 ms",
                    statsSweeps.median() <= 100_000_000L, statsSweeps.median() / 1e8);
            report.row("d", String.format(Locale.ROOT, "sweep of %,d NodeGetVolumeStats calls, 8 callers at once (kubelet"
                            + " asks per pod, concurrently), median of 3", vs.size()),
                    Samples.fmt(statsParallel.median()), String.format(Locale.ROOT, "%,d Probes the same way %s",
                            vs.size(), Samples.fmt(probeParallel.median())),
                    (double) statsParallel.median() / probeParallel.median(), "<= 100 ms",
                    statsParallel.median() <= 100_000_000L, statsParallel.median() / 1e8);
            report.detail("d", String.format(Locale.ROOT, "%,d ext4 volumes on 4 MiB sparse loop files, formatted by"
                    + " the plugin while staging (8 client threads: %s); stats asked at the staging path",
                    vs.size(), Samples.fmt(stageWall)));
            report.detail("d", "NodeGetVolumeStats per call, client: " + statsCalls.summary());
            report.detail("d", "Probe per call, client: " + probeCalls.summary());
            report.detail("d", "sweeps of NodeGetVolumeStats: " + statsSweeps.summary());
            report.detail("d", "sweeps of Probe: " + probeSweeps.summary());
            report.detail("d", String.format(Locale.ROOT, "the sweep with 8 concurrent callers on the one channel, median"
                            + " of 3: %s for %,d NodeGetVolumeStats, %s for %,d Probes (ratio %s)",
                    Samples.fmt(statsParallel.median()), vs.size(), Samples.fmt(probeParallel.median()), vs.size(),
                    Samples.ratio((double) statsParallel.median() / probeParallel.median())));
            report.detail("d", "GetPluginInfo (answers a constant: the fixed cost of any RPC), per call, client: "
                    + infoCalls.summary() + "; sweeps: " + infoSweeps.summary() + "; server-side mean "
                    + Samples.fmt(serverInfo));
            report.diag("NodeGetVolumeStats server-side mean minus GetPluginInfo's (interceptors, dispatch, metrics"
                    + " and the response, common to every RPC): " + Samples.fmt(serverStats - serverInfo)
                    + " = the stats call's own work; GetPluginInfo's server-side mean alone: "
                    + Samples.fmt(serverInfo));
            report.detail("d", String.format(Locale.ROOT, "server side from /metrics before/after the measured sweeps:"
                            + " NodeGetVolumeStats %.0f calls, %.6f s; Probe %.0f calls, %.6f s", statsCount,
                    s1[0] - s0[0], probeCount, p1[0] - p0[0]));
            report.detail("d", "client-side time beyond the server's, per call (median - server mean): "
                    + Samples.fmt(statsCalls.median() - serverStats) + " for NodeGetVolumeStats, "
                    + Samples.fmt(probeCalls.median() - serverProbe) + " for Probe (gRPC, HTTP/2, the socket,"
                    + " both JVMs' scheduling)");
        } finally {
            long tu = System.nanoTime();
            int failed = Volumes.teardown(node, vs, 8);
            report.detail("d", "teardown: unstaged " + vs.size() + " volumes (8 threads) in "
                    + Samples.fmt(System.nanoTime() - tu) + ", failed: " + failed);
            volumes.destroy(vs);
        }
    }

    /** {@code vs.size()} calls spread over {@code threads} callers; returns the wall time. */
    private static long parallelSweep(ExecutorService callers, int threads, NodeGrpc.NodeBlockingStub node,
                                      IdentityGrpc.IdentityBlockingStub identity, List<Volume> vs, int kind)
            throws Exception {
        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
        List<Future<?>> done = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            done.add(callers.submit(() -> {
                for (int i = next.getAndIncrement(); i < vs.size(); i = next.getAndIncrement()) {
                    if (kind == STATS) {
                        node.nodeGetVolumeStats(vs.get(i).stats);
                    } else {
                        identity.probe(PROBE);
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : done) {
            f.get();
        }
        return System.nanoTime() - start;
    }

    private static final int STATS = 0;
    private static final int PROBE_CALL = 1;
    private static final int INFO_CALL = 2;

    private static long sweep(NodeGrpc.NodeBlockingStub node, IdentityGrpc.IdentityBlockingStub identity,
                              List<Volume> vs, Samples calls, int kind) {
        long start = System.nanoTime();
        for (Volume v : vs) {
            long t = System.nanoTime();
            switch (kind) {
                case STATS -> node.nodeGetVolumeStats(v.stats);
                case PROBE_CALL -> identity.probe(PROBE);
                default -> identity.getPluginInfo(INFO);
            }
            if (calls != null) {
                calls.add(System.nanoTime() - t);
            }
        }
        return System.nanoTime() - start;
    }

    // ------------------------------------------------------------------------------------------------ (e)

    /** When the idle RSS is read a second time: after C1's start-up work and a native-heap trim or two. */
    private static final long SETTLED_MILLIS = 15_000;

    private void figureE(List<String> image, Burst imageBurst, Burst defaultBurst) throws Exception {
        log("(e) start to Probe-ready and RSS, image flags vs default flags (" + o.startTrials() + " starts each)");
        Map<String, List<String>> configs = new LinkedHashMap<>();
        configs.put("image", image);
        configs.put("default", List.of());
        if (o.aotCache() != null) {
            configs.put("jvm.args, no AOT cache", List.of("@" + o.jvmArgs()));
        }
        Map<String, Samples> start = new LinkedHashMap<>();
        Map<String, Samples> idle = new LinkedHashMap<>();
        Map<String, Samples> anon = new LinkedHashMap<>();
        Map<String, String> maps = new LinkedHashMap<>();
        Map<String, Samples> toCheck = new LinkedHashMap<>();
        Map<String, Samples> toListen = new LinkedHashMap<>();
        Map<String, Samples> toAccept = new LinkedHashMap<>();
        Map<String, Samples> fresh = new LinkedHashMap<>();
        Map<String, Long> settled = new LinkedHashMap<>();
        configs.keySet().forEach(k -> {
            toAccept.put(k, new Samples());
            fresh.put(k, new Samples());
            toCheck.put(k, new Samples());
            toListen.put(k, new Samples());
            start.put(k, new Samples());
            idle.put(k, new Samples());
            anon.put(k, new Samples());
        });
        List<String> names = new ArrayList<>(configs.keySet());
        Volumes.runCommand(List.of("sync"));
        for (int t = 0; t < o.startTrials(); t++) {
            for (int i = 0; i < names.size(); i++) {
                String name = names.get((i + t) % names.size()); // rotate the order: no config always goes first
                String dirName = "e-" + name.replaceAll("[^a-z]", "") + "-" + t;
                try (PluginProcess p = PluginProcess.start(dirName, configs.get(name), o.work().resolve(dirName),
                        null, o)) {
                    plugins.add(p);
                    start.get(name).add(p.awaitProbeReady(eventLoops, Duration.ofSeconds(60)));
                    toAccept.get(name).add(p.acceptingNanos);
                    fresh.get(name).add(p.freshChannelProbe(eventLoops));
                    Thread.sleep(o.idleSettleMillis());
                    idle.get(name).add(p.statusKib("VmRSS"));
                    anon.get(name).add(p.statusKib("RssAnon"));
                    maps.putIfAbsent(name, rssByMapping(p.process.pid()));
                    if (t == 0) {
                        // Idle as a daemon is: its start-up compilations done and their memory given back.
                        Thread.sleep(SETTLED_MILLIS - o.idleSettleMillis());
                        settled.put(name, p.statusKib("VmRSS"));
                    }
                    toCheck.get(name).add(p.loggedAfterStart("startup check") * 1_000_000);
                    toListen.get(name).add(p.loggedAfterStart("listening on unix://") * 1_000_000);
                }
            }
        }
        Samples imageStart = start.get("image");
        Samples defaultStart = start.get("default");
        report.row("e", "exec to first successful Probe, median of " + o.startTrials(), Samples.fmt(imageStart.median()),
                "default flags " + Samples.fmt(defaultStart.median()),
                (double) imageStart.median() / defaultStart.median(), "<= 400 ms",
                imageStart.median() <= 400_000_000L, imageStart.median() / 4e8);
        long imageIdle = idle.get("image").median();
        long defaultIdle = idle.get("default").median();
        report.row("e", "idle RSS (VmRSS " + o.idleSettleMillis() / 1000.0 + " s after Probe-ready), median",
                Samples.mib(imageIdle), "default flags " + Samples.mib(defaultIdle),
                (double) imageIdle / defaultIdle, "<= 64 MiB", imageIdle <= 64 * 1024, imageIdle / (64.0 * 1024));
        long imageSettled = settled.get("image");
        report.row("e", "idle RSS settled (VmRSS " + SETTLED_MILLIS / 1000 + " s after Probe-ready, first start)",
                Samples.mib(imageSettled), "default flags " + Samples.mib(settled.get("default")),
                (double) imageSettled / settled.get("default"), "<= 64 MiB", imageSettled <= 64 * 1024,
                imageSettled / (64.0 * 1024));
        if (imageBurst != null && defaultBurst != null) {
            report.row("e", "peak RSS during the " + o.burst() + "-volume burst (VmHWM, reset before it)",
                    Samples.mib(imageBurst.hwmKib()), "default flags " + Samples.mib(defaultBurst.hwmKib()),
                    (double) imageBurst.hwmKib() / defaultBurst.hwmKib(), "<= 128 MiB",
                    imageBurst.hwmKib() <= 128 * 1024, imageBurst.hwmKib() / (128.0 * 1024));
        }
        for (String name : names) {
            report.detail("e", name + ": start " + start.get(name).summary() + "; idle VmRSS median "
                    + Samples.mib(idle.get(name).median()) + " (min " + Samples.mib(idle.get(name).min()) + ", max "
                    + Samples.mib(idle.get(name).max()) + "), of which RssAnon median "
                    + Samples.mib(anon.get(name).median()));
        }
        for (Burst b : java.util.Arrays.asList(imageBurst, defaultBurst)) {
            if (b != null) {
                report.detail("e", "burst on " + b.flags() + ": VmRSS before " + Samples.mib(b.rssBeforeKib())
                        + ", VmHWM during " + Samples.mib(b.hwmKib()) + ", VmRSS after " + Samples.mib(b.rssAfterKib())
                        + "; wall " + Samples.fmt(b.wall()) + " vs one volume " + Samples.fmt(b.one()) + " x "
                        + o.burst() + " / " + cores + " = "
                        + Samples.ratio(b.wall() / ((double) b.one() * o.burst() / cores)));
            }
        }
        report.detail("e", "image = java " + String.join(" ", image) + " -jar blocknode.jar ...; default = java -jar "
                + "blocknode.jar ... (JVM ergonomics: G1, heap 1/4 of RAM); jvm.args = " + String.join(" ",
                Files.readAllLines(o.jvmArgs()).stream().map(String::strip).filter(l -> !l.isEmpty()).toList()));
        for (String name : names) {
            report.diag("start phases of " + name + " (medians; from the plugin's JSON log times, ms resolution):"
                    + " exec to the startup-check line (JVM boot, native library, wiring) "
                    + Samples.fmt(toCheck.get(name).median()) + ", to \"listening\" (metrics registry and HTTP server,"
                    + " Netty epoll, gRPC server) " + Samples.fmt(toListen.get(name).median())
                    + "; from the bench's clock: exec to the socket accepting " + Samples.fmt(toAccept.get(name).median())
                    + ", to the first Probe answered " + Samples.fmt(start.get(name).median())
                    + "; a second Probe right after on a fresh channel (the client's connect and HTTP/2 handshake"
                    + " against a server past its first call) " + Samples.fmt(fresh.get(name).median()));
        }
        maps.forEach((name, text) -> report.diag("idle RSS by mapping (/proc/PID/smaps, first start), " + name + ": "
                + text));
    }

    /** The largest contributors to RSS by mapping (file name or [anon]), with their anonymous (dirtied) part. */
    private static String rssByMapping(long pid) throws IOException {
        Map<String, long[]> byName = new LinkedHashMap<>();
        String current = "[anon]";
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps"))) {
            String[] f = line.split("\\s+");
            if (f.length >= 5 && f[0].matches("[0-9a-f]+-[0-9a-f]+")) {
                current = f.length >= 6 ? f[5] : "[anon]";
                if (current.startsWith("/")) {
                    current = Path.of(current).getFileName().toString();
                }
            } else if (line.startsWith("Rss:")) {
                byName.computeIfAbsent(current, k -> new long[2])[0] += Long.parseLong(f[1]);
            } else if (line.startsWith("Anonymous:")) {
                byName.computeIfAbsent(current, k -> new long[2])[1] += Long.parseLong(f[1]);
            }
        }
        List<Map.Entry<String, long[]>> sorted = new ArrayList<>(byName.entrySet());
        sorted.sort((x, y) -> Long.compare(y.getValue()[0], x.getValue()[0]));
        StringBuilder out = new StringBuilder();
        long rest = 0;
        for (int i = 0; i < sorted.size(); i++) {
            long[] v = sorted.get(i).getValue();
            if (i < 4) {
                out.append(sorted.get(i).getKey()).append(' ').append(Samples.mib(v[0])).append(" (anon ")
                        .append(Samples.mib(v[1])).append("), ");
            } else {
                rest += v[0];
            }
        }
        return out.append("the rest ").append(Samples.mib(rest)).toString();
    }

    // -------------------------------------------------------------------------------------------- diagnostics

    /**
     * The cycle and the Probe pair on two plugins at once, one with the image's flags (C1 only, serial GC,
     * AOT cache) and one with the JVM's defaults (C2, G1), interleaved after a warm-up long enough for C2:
     * how much of the per-call cost is the JIT tier the image chose for footprint.
     */
    private void flagsExperiment(List<String> image) throws Exception {
        log("diagnostics: the cycle with the image's flags vs the JVM's defaults, interleaved");
        try (PluginProcess pi = startPlugin("x-image", image, null);
             PluginProcess pd = startPlugin("x-default", List.of(), null)) {
            List<PluginProcess> both = List.of(pi, pd);
            List<Volume> vols = new ArrayList<>();
            for (PluginProcess p : both) {
                Volume v = volumes.create(p, "x", 1, 16 * MIB).get(0);
                p.client().node().nodeStageVolume(v.stage);
                vols.add(v);
            }
            try {
                for (int i = 0; i < 3000; i++) {
                    for (PluginProcess p : both) {
                        probePair(p.client().identity());
                    }
                }
                for (int i = 0; i < 1500; i++) {
                    for (int j = 0; j < 2; j++) {
                        cycle(both.get(j).client().node(), vols.get(j), null, null);
                    }
                }
                Samples[] cycles = {new Samples(), new Samples()};
                Samples[] probes = {new Samples(), new Samples()};
                long[] cpu = new long[2];
                int k = Math.max(1, o.cycles() / o.rounds());
                for (int r = 0; r < o.rounds(); r++) {
                    for (int j = 0; j < 2; j++) {
                        PluginProcess p = both.get(j);
                        for (int i = 0; i < k; i++) {
                            probes[j].add(probePair(p.client().identity()));
                        }
                        long c0 = p.cpuNanos();
                        for (int i = 0; i < k; i++) {
                            cycles[j].add(cycle(p.client().node(), vols.get(j), null, null));
                        }
                        cpu[j] += p.cpuNanos() - c0;
                    }
                }
                for (int j = 0; j < 2; j++) {
                    report.diag((j == 0 ? "image flags" : "default flags (C2, G1)") + ", after 3,000 Probe pairs and"
                            + " 1,500 cycles of warm-up, interleaved with the other: cycle median "
                            + Samples.fmt(cycles[j].median()) + " (plugin CPU " + Samples.fmt((double) cpu[j] / cycles[j].size())
                            + " per cycle), p90 " + Samples.fmt(cycles[j].p90()) + "; Probe pair median "
                            + Samples.fmt(probes[j].median()));
                }
                report.diag("image flags / default flags, cycle median: "
                        + Samples.ratio((double) cycles[0].median() / cycles[1].median()) + ", Probe pair median: "
                        + Samples.ratio((double) probes[0].median() / probes[1].median()) + ", plugin CPU per cycle: "
                        + Samples.ratio((double) cpu[0] / cpu[1]));
            } finally {
                for (int j = 0; j < 2; j++) {
                    Volumes.teardown(both.get(j).client().node(), List.of(vols.get(j)), 1);
                }
                volumes.destroy(vols);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ (f)

    private static final int DEVICE_WAIT_TRIALS = 10;

    /**
     * The plugin's device waiter (in a JVM with the image's flags) waiting for a device that appears while it
     * pauses: on the kernel's uevent vs a 1 s poll. A loop device stands in for a SCSI disk (this kernel has
     * no SCSI; the VM tier measures iSCSI, see test-e2e/vm/README.md), the waiter's code is the same.
     */
    private void figureF() throws Exception {
        log("(f) device waits: kernel uevent vs a 1 s poll (loop devices, " + DEVICE_WAIT_TRIALS + " of each)");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("@" + o.jvmArgs());
        command.addAll(List.of("-cp", o.jar() + ":" + o.classes(), "dev.blocknode.bench.DeviceWaitBench",
                o.work().resolve("f").toString(), Integer.toString(DEVICE_WAIT_TRIALS)));
        Map<String, Samples> byMode = new LinkedHashMap<>();
        for (String line : Volumes.runCommand(command)) {
            String[] parts = line.split("\t");
            if (parts.length == 2 && parts[0].startsWith("f-")) {
                Samples samples = new Samples();
                for (String value : parts[1].split(",")) {
                    samples.add(Long.parseLong(value));
                }
                byMode.put(parts[0].substring(2), samples);
            }
        }
        Samples events = byMode.get("events");
        Samples poll = byMode.get("poll");
        if (events == null || poll == null) {
            throw new IOException("DeviceWaitBench printed no figures: " + byMode.keySet());
        }
        long eventsMedian = Math.max(0, events.median());
        long eventsMax = Math.max(0, events.max());
        report.row("f", "device there -> the waiter has it, on the uevent (1 s safety poll behind), median of "
                + events.size(), Samples.fmt(eventsMedian), "1 s poll " + Samples.fmt(poll.median()),
                (double) eventsMedian / poll.median(), "<= 50 ms", eventsMedian <= 50_000_000L, eventsMedian / 5e7);
        report.row("f", "the same, slowest of " + events.size(), Samples.fmt(eventsMax), "1 s poll "
                + Samples.fmt(poll.max()), (double) eventsMax / poll.max(), "<= 50 ms", eventsMax <= 50_000_000L,
                eventsMax / 5e7);
        report.detail("f", "on the uevent (--device-wait=events): " + events.summary() + " (negative: the waiter"
                + " had the device before losetup had exited; shown as 0 in the table)");
        report.detail("f", "1 s poll (--device-wait=poll --device-poll-interval=1s): " + poll.summary() + " (near"
                + " its worst by construction: the device appears right after a look; arriving at random, half"
                + " the interval on average)");
        report.detail("f", "a loop device attached by losetup while the plugin's DeviceWaiter pauses, from losetup's"
                + " exit; iSCSI in the VM tier: test-e2e/vm/README.md, \"Event-driven waits vs polling\"");
    }

    /** Record-store and syscall costs in a JVM with the image's flags: where the per-call time goes. */
    private void diagnostics(Path tmpfs) throws Exception {
        log("diagnostics: record store and syscalls in a JVM with the image's flags");
        Path record = o.work().resolve("record");
        if (!Files.exists(record)) {
            return;
        }
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("@" + o.jvmArgs());
        command.addAll(List.of("-cp", o.jar() + ":" + o.classes(), "dev.blocknode.bench.Micro", record.toString(),
                o.work().resolve("micro-disk").toString(), tmpfs.resolve("micro").toString(), tmpfs.toString()));
        for (String line : Volumes.runCommand(command)) {
            String[] parts = line.split("\t");
            if (parts.length == 2) {
                report.diag(parts[0] + ": " + Samples.fmt(Double.parseDouble(parts[1])) + " per call (median of"
                        + " batches)");
            } else {
                report.diag(line);
            }
        }
    }

    // -------------------------------------------------------------------------------------------- plumbing

    /** Stops every plugin this run started; mounts and loop devices left by a failure are the trap's. */
    private void cleanup() {
        for (PluginProcess p : plugins) {
            p.close();
        }
        eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    private static String fsOf(Path path) {
        try {
            return Files.getFileStore(path).type();
        } catch (IOException e) {
            return "?";
        }
    }

    static void log(String message) {
        System.err.println("bench: " + message);
    }
}
