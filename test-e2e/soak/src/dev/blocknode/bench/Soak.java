package dev.blocknode.bench;

import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * {@code make soak}: many lifecycle cycles (NodeStage, NodePublish, NodeUnpublish, NodeUnstage) of loop
 * volumes (ext4, xfs and raw block) against the plugin as a separate process on its socket, several
 * volumes at once in a seeded random interleaving, while the plugin's open fds, threads and RSS are
 * sampled from /proc. Fails when any call fails, when a mount is left, or when a figure grows past its
 * stated tolerance after the warm-up. Reuses the bench's plugin process, loop volumes and bnbench helper
 * (same package, compiled together by soak.sh).
 */
public final class Soak {

    /** Growth allowed from the end of the warm-up to the end of the run. */
    static final int FD_TOLERANCE = 8;
    static final int THREAD_TOLERANCE = 8;
    /** Objects left behind: the heap a full GC leaves, which no heap sizing policy changes. */
    static final long LIVE_HEAP_TOLERANCE_KIB = 4 * 1024;
    /**
     * Native memory left behind: VmRSS minus the committed Java heap. VmRSS itself is not compared: the
     * serial collector may grow the heap toward -Xmx (deploy/jvm.args) at any time after a burst of garbage
     * (a large mount table read, say) and never gives it back, which is sizing, not a leak.
     */
    static final long NON_HEAP_RSS_TOLERANCE_KIB = 16 * 1024;

    record Options(Path jar, Path work, Path helper, Path jvmArgs, Path pidFile, Path results, int cycles,
                   int volumesPerKind, int threads, long seed, int samples, List<String> pluginFlags) {

        static Options parse(String[] args) {
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i + 1 < args.length; i += 2) {
                m.put(args[i].replaceFirst("^--", ""), args[i + 1]);
            }
            return new Options(Path.of(m.get("jar")), Path.of(m.get("work")), Path.of(m.get("helper")),
                    Path.of(m.get("jvm-args")), Path.of(m.get("pid-file")), Path.of(m.get("results")),
                    Integer.parseInt(m.getOrDefault("cycles", "10000")),
                    Integer.parseInt(m.getOrDefault("volumes-per-kind", "3")),
                    Integer.parseInt(m.getOrDefault("threads", "4")),
                    Long.parseLong(m.getOrDefault("seed", "42")),
                    Integer.parseInt(m.getOrDefault("samples", "50")),
                    m.getOrDefault("plugin-flags", "").isBlank() ? List.of()
                            : List.of(m.get("plugin-flags").strip().split("\\s+")));
        }
    }

    enum Kind { EXT4, XFS, BLOCK }

    /** One volume and its four requests, built once. */
    record SoakVolume(Kind kind, Volumes.Volume volume, NodeStageVolumeRequest stage,
                      NodePublishVolumeRequest publish, NodeUnpublishVolumeRequest unpublish,
                      NodeUnstageVolumeRequest unstage, NodeGetVolumeStatsRequest stats) {

        static SoakVolume of(Kind kind, Volumes.Volume v) {
            VolumeCapability.Builder capability = VolumeCapability.newBuilder().setAccessMode(
                    VolumeCapability.AccessMode.newBuilder().setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER));
            switch (kind) {
                case EXT4 -> capability.setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"));
                case XFS -> capability.setMount(VolumeCapability.MountVolume.newBuilder().setFsType("xfs"));
                case BLOCK -> capability.setBlock(VolumeCapability.BlockVolume.getDefaultInstance());
            }
            VolumeCapability cap = capability.build();
            return new SoakVolume(kind, v,
                    NodeStageVolumeRequest.newBuilder().setVolumeId(v.id).setStagingTargetPath(v.staging.toString())
                            .setVolumeCapability(cap).putVolumeContext("devicePath", v.device.toString()).build(),
                    NodePublishVolumeRequest.newBuilder().setVolumeId(v.id).setStagingTargetPath(v.staging.toString())
                            .setTargetPath(v.target.toString()).setVolumeCapability(cap).build(),
                    v.unpublish, v.unstage,
                    NodeGetVolumeStatsRequest.newBuilder().setVolumeId(v.id).setVolumePath(
                            (kind == Kind.BLOCK ? v.target : v.staging).toString()).build());
        }
    }

    /** One reading of the plugin process; the heap figures (after a full GC) only when no call is in flight. */
    record Sample(int cycle, long millis, int fds, long threads, long rssKib, long heapLiveKib, long heapCommittedKib) {
    }

    private final Options o;
    private final List<Sample> samples = new ArrayList<>();
    /** Readings with no call in flight: start, after the warm-up, middle, end. */
    private final List<Sample> quiescent = new ArrayList<>();
    private final AtomicInteger claimed = new AtomicInteger();
    private final AtomicInteger done = new AtomicInteger();
    private final List<SoakVolume> free = new ArrayList<>();
    private long startMillis;

    private Soak(Options o) {
        this.o = o;
    }

    public static void main(String[] args) throws Exception {
        System.exit(new Soak(Options.parse(args)).run());
    }

    private int run() throws Exception {
        BenchOptions forProcess = new BenchOptions(o.jar(), o.work(), o.helper(), o.jvmArgs(), null, o.results(),
                o.pidFile(), o.work(), 0, 0, 0, 0, 0, 0, 0, 0, "", List.of(), null, null, null);
        EventLoopGroup eventLoops = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        Volumes volumes = new Volumes(o.work().resolve("images"), o.helper());
        List<String> failures = new ArrayList<>();
        List<String> flags = new ArrayList<>(List.of("@" + o.jvmArgs()));
        flags.addAll(o.pluginFlags());
        try (PluginProcess plugin = PluginProcess.start("soak", flags, o.work().resolve("soak"), null, forProcess)) {
            plugin.awaitProbeReady(eventLoops, Duration.ofSeconds(60));
            // xfs refuses filesystems under 300 MiB; the files are sparse, so size costs nothing.
            for (SoakVolume v : create(volumes, plugin, Kind.EXT4, 16L << 20)) {
                free.add(v);
            }
            for (SoakVolume v : create(volumes, plugin, Kind.XFS, 320L << 20)) {
                free.add(v);
            }
            for (SoakVolume v : create(volumes, plugin, Kind.BLOCK, 16L << 20)) {
                free.add(v);
            }
            NodeGrpc.NodeBlockingStub node = plugin.client().node();
            startMillis = System.currentTimeMillis();
            quiescent.add(quiescentSample(plugin, 0));
            int interval = Math.max(1, o.cycles() / o.samples());
            // Three phases, each ending with every client idle: the quiescent readings compare like with like
            // (mid-run readings include the fds of calls in flight, and are only reported).
            int[] ends = {o.cycles() / 10, o.cycles() / 2, o.cycles()};
            ExecutorService pool = Executors.newFixedThreadPool(o.threads());
            for (int phase = 0; phase < ends.length && failures.isEmpty(); phase++) {
                int end = ends[phase];
                List<Future<?>> workers = new ArrayList<>();
                for (int t = 0; t < o.threads(); t++) {
                    Random random = new Random((o.seed() * 31 + t) * 7 + phase);
                    workers.add(pool.submit(() -> {
                        work(node, random, plugin, interval, end);
                        return null;
                    }));
                }
                for (Future<?> worker : workers) {
                    try {
                        worker.get();
                    } catch (java.util.concurrent.ExecutionException e) {
                        failures.add(String.valueOf(e.getCause()));
                        claimed.set(Integer.MAX_VALUE / 2); // the other workers stop after their current cycle
                    }
                }
                quiescent.add(quiescentSample(plugin, done.get()));
            }
            pool.shutdown();
            pool.awaitTermination(1, TimeUnit.MINUTES);
            long wallMillis = System.currentTimeMillis() - startMillis;
            String mountsLeft = mountsUnder(o.work());
            if (!mountsLeft.isEmpty()) {
                failures.add("mounts left under the work dir: " + mountsLeft);
            }
            failures.addAll(report(wallMillis));
        } finally {
            volumes.destroyAll();
            eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
        if (!failures.isEmpty()) {
            System.err.println("soak: FAILED:\n  " + String.join("\n  ", failures));
            return 1;
        }
        System.err.println("soak: passed");
        return 0;
    }

    private List<SoakVolume> create(Volumes volumes, PluginProcess plugin, Kind kind, long size) throws IOException {
        List<SoakVolume> created = new ArrayList<>();
        for (Volumes.Volume v : volumes.create(plugin, "soak-" + kind.name().toLowerCase(), o.volumesPerKind(), size)) {
            created.add(SoakVolume.of(kind, v));
        }
        return created;
    }

    /**
     * Cycles until the count is reached: takes a random free volume (so volumes and kinds interleave at
     * random across the threads), runs its lifecycle with seeded extras (a repeated stage or unpublish, as
     * kubelet's retries send them; a stats call while published), puts it back.
     */
    private void work(NodeGrpc.NodeBlockingStub node, Random random, PluginProcess plugin, int interval, int end)
            throws Exception {
        while (claimed.incrementAndGet() <= end) {
            SoakVolume v = take(random);
            try {
                NodeGrpc.NodeBlockingStub n = node.withDeadlineAfter(2, TimeUnit.MINUTES);
                n.nodeStageVolume(v.stage());
                if (random.nextInt(5) == 0) {
                    n.nodeStageVolume(v.stage());
                }
                n.nodePublishVolume(v.publish());
                if (random.nextInt(4) == 0) {
                    n.nodeGetVolumeStats(v.stats());
                }
                n.nodeUnpublishVolume(v.unpublish());
                if (random.nextInt(5) == 0) {
                    n.nodeUnpublishVolume(v.unpublish());
                }
                n.nodeUnstageVolume(v.unstage());
            } catch (RuntimeException e) {
                throw new IOException("cycle on " + v.volume().id + " (" + v.kind() + ") failed: " + e.getMessage(), e);
            } finally {
                give(v);
            }
            int finished = done.incrementAndGet();
            if (finished % interval == 0 && finished < end) {
                sample(plugin, finished);
            }
        }
        claimed.decrementAndGet(); // the claim past the phase's end was not run
    }

    private synchronized SoakVolume take(Random random) throws InterruptedException {
        while (free.isEmpty()) {
            wait();
        }
        return free.remove(random.nextInt(free.size()));
    }

    private synchronized void give(SoakVolume v) {
        free.add(v);
        notifyAll();
    }

    private Sample sample(PluginProcess plugin, int cycle) throws IOException {
        int fds;
        try (Stream<Path> entries = Files.list(Path.of("/proc", Long.toString(plugin.process.pid()), "fd"))) {
            fds = (int) entries.count();
        }
        Sample s = new Sample(cycle, System.currentTimeMillis() - startMillis, fds, plugin.statusKib("Threads"),
                plugin.statusKib("VmRSS"), -1, -1);
        synchronized (samples) {
            samples.add(s);
        }
        return s;
    }

    /**
     * With every client idle: a full GC in the plugin (jcmd GC.run), then the live heap it left (jcmd
     * GC.heap_info: the generations' "used") and the committed heap, then the /proc readings. The live heap
     * says whether objects accumulate, whatever the heap's sizing policy does to RSS.
     */
    private Sample quiescentSample(PluginProcess plugin, int cycle) throws IOException {
        String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
        String pid = Long.toString(plugin.process.pid());
        Volumes.runCommand(List.of(jcmd, pid, "GC.run"));
        long used = 0;
        long committed = 0;
        for (String line : Volumes.runCommand(List.of(jcmd, pid, "GC.heap_info"))) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\S+\\s+total (\\d+)K, used (\\d+)K")
                    .matcher(line.strip());
            if (m.find()) {
                committed += Long.parseLong(m.group(1));
                used += Long.parseLong(m.group(2));
            }
        }
        if (o.pluginFlags().stream().anyMatch(f -> f.startsWith("-XX:NativeMemoryTracking"))) {
            Files.write(o.results().resolveSibling("nmt-" + cycle + ".txt"),
                    Volumes.runCommand(List.of(jcmd, pid, "VM.native_memory", "summary")));
        }
        Sample s = sample(plugin, cycle);
        return new Sample(s.cycle(), s.millis(), s.fds(), s.threads(), s.rssKib(), used, committed);
    }

    /** Prints and writes the table; returns the figures that grew past their tolerance. */
    private List<String> report(long wallMillis) throws IOException {
        List<Sample> all;
        synchronized (samples) {
            all = new ArrayList<>(samples);
        }
        int warmup = o.cycles() / 10;
        Sample start = quiescent.get(0);
        Sample warm = quiescent.get(Math.min(1, quiescent.size() - 1));
        Sample middle = quiescent.get(Math.min(2, quiescent.size() - 1));
        Sample end = quiescent.get(quiescent.size() - 1);
        List<Sample> after = all.stream().filter(s -> s.cycle() >= warm.cycle()).toList();
        Sample max = new Sample(-1, 0, after.stream().mapToInt(Sample::fds).max().orElse(0),
                after.stream().mapToLong(Sample::threads).max().orElse(0),
                after.stream().mapToLong(Sample::rssKib).max().orElse(0), -1, -1);
        StringBuilder t = new StringBuilder();
        t.append(String.format("blocknode soak: %d cycles (%d ext4, %d xfs, %d block loop volumes; %d client threads;"
                        + " seed %d) in %.1f s (%.1f cycles/s)%n%n", end.cycle(), o.volumesPerKind(), o.volumesPerKind(),
                o.volumesPerKind(), o.threads(), o.seed(), wallMillis / 1000.0, end.cycle() * 1000.0 / wallMillis));
        t.append("Readings with no call in flight, and the largest of the " + after.size() + " taken after the warm-up"
                + " (those include calls in flight):\n\n");
        t.append("| point | cycle | time s | open fds | threads | VmRSS MiB | heap live after GC MiB | heap committed MiB |\n"
                + "|---|---|---|---|---|---|---|---|\n");
        row(t, "start", start);
        row(t, "after warm-up", warm);
        row(t, "middle", middle);
        row(t, "end", end);
        t.append(String.format("| max after warm-up (in flight) | | | %d | %d | %.1f | | |%n", max.fds(), max.threads(),
                max.rssKib() / 1024.0));
        List<String> grown = new ArrayList<>();
        long liveGrowth = end.heapLiveKib() - warm.heapLiveKib();
        long nonHeapGrowth = (end.rssKib() - end.heapCommittedKib()) - (warm.rssKib() - warm.heapCommittedKib());
        check(grown, "open fds", end.fds() - warm.fds(), FD_TOLERANCE, "");
        check(grown, "threads", end.threads() - warm.threads(), THREAD_TOLERANCE, "");
        check(grown, "the live heap after a full GC", liveGrowth / 1024, LIVE_HEAP_TOLERANCE_KIB / 1024, " MiB");
        check(grown, "VmRSS outside the Java heap", nonHeapGrowth / 1024, NON_HEAP_RSS_TOLERANCE_KIB / 1024, " MiB");
        t.append(String.format("%nFrom the end of the warm-up (the first %d cycles) to the end: open fds %+d (tolerance %d),"
                        + " threads %+d (tolerance %d), live heap after a full GC %+.1f MiB (tolerance %d MiB), VmRSS"
                        + " outside the Java heap %+.1f MiB (tolerance %d MiB): %s. VmRSS itself %+.1f MiB, of which the"
                        + " committed heap %+.1f MiB (the collector's sizing, bounded by -Xmx).%n",
                warmup, end.fds() - warm.fds(), FD_TOLERANCE, end.threads() - warm.threads(), THREAD_TOLERANCE,
                liveGrowth / 1024.0, LIVE_HEAP_TOLERANCE_KIB / 1024, nonHeapGrowth / 1024.0,
                NON_HEAP_RSS_TOLERANCE_KIB / 1024, grown.isEmpty() ? "within" : "EXCEEDED",
                (end.rssKib() - warm.rssKib()) / 1024.0, (end.heapCommittedKib() - warm.heapCommittedKib()) / 1024.0));
        System.out.print(t);
        Files.createDirectories(o.results().getParent());
        Files.writeString(o.results(), t.toString(), StandardCharsets.UTF_8);
        return grown;
    }

    private static void row(StringBuilder t, String name, Sample s) {
        t.append(String.format("| %s | %d | %.1f | %d | %d | %.1f | %.1f | %.1f |%n", name, s.cycle(), s.millis() / 1000.0,
                s.fds(), s.threads(), s.rssKib() / 1024.0, s.heapLiveKib() / 1024.0, s.heapCommittedKib() / 1024.0));
    }

    private static void check(List<String> grown, String what, long growth, long tolerance, String unit) {
        if (growth > tolerance) {
            grown.add(what + " grew by " + growth + unit + " after the warm-up (tolerance " + tolerance + unit + ")");
        }
    }

    private static String mountsUnder(Path dir) throws IOException {
        String prefix = " " + dir + "/";
        return String.join(", ", Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .filter(line -> line.contains(prefix)).limit(5).toList());
    }
}
