package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;
import dev.blocknode.csi.v1.CapacityRange;
import dev.blocknode.csi.v1.CreateVolumeRequest;
import dev.blocknode.csi.v1.CreateVolumeResponse;
import dev.blocknode.csi.v1.DeleteVolumeRequest;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToLongFunction;

import static dev.blocknode.bench.BenchRun.INFO;
import static dev.blocknode.bench.BenchRun.MIB;
import static dev.blocknode.bench.BenchRun.PROBE;
import static dev.blocknode.bench.BenchRun.log;

/**
 * (g) blocknode side by side with csi-driver-host-path, the kubernetes-csi reference driver: the same clients,
 * the same requests in kubelet's layout, interleaved by round (the order of drivers and clients alternating),
 * on the same machine at the same time. Ratios are reference / blocknode: above 1 blocknode is faster.
 *
 * <p>The goals are measured with kubelet's client: grpc-go with a new connection for every call
 * ({@link KubeletClient}). The same Go client on one long-lived connection, and the bench's grpc-java client
 * (figures a-d's, one channel), are diagnostics beside it: what a connection per call costs each driver, and
 * how much of a ratio is the client; the tail attribution follows grpc-java's cycles, whose start it knows.
 */
final class FigureG extends Figure {

    /** The clients, each on every driver in every round. */
    private enum Client {
        KUBELET("grpc-go, kubelet's pattern (a connection per call, its NodeGetCapabilities calls)",
                KubeletClient.Mode.KUBELET),
        GO_SHARED("grpc-go, one connection", KubeletClient.Mode.SHARED),
        JAVA("grpc-java, one channel (the bench's)", null);

        final String label;
        final KubeletClient.Mode mode;

        Client(String label, KubeletClient.Mode mode) {
            this.label = label;
            this.mode = mode;
        }
    }

    /** A ReadWriteOnce access mode for either kind of volume, as the reference driver's CreateVolume is asked. */
    private static final VolumeCapability.AccessMode WRITER = VolumeCapability.AccessMode.newBuilder()
            .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER).build();
    /**
     * ReadWriteOnce as kubelet sends it in NodeStageVolume and NodePublishVolume to a driver that advertises
     * SINGLE_NODE_MULTI_WRITER, as both do (csi_client.go asSingleNodeMultiWriterCapableCSIAccessModeV1; the Go
     * client's kubelet mode checks the capability).
     */
    private static final VolumeCapability.AccessMode KUBELET_RWO = VolumeCapability.AccessMode.newBuilder()
            .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_MULTI_WRITER).build();
    private static final VolumeCapability RAW = VolumeCapability.newBuilder()
            .setBlock(VolumeCapability.BlockVolume.getDefaultInstance()).setAccessMode(WRITER).build();

    private enum Measure {
        PROBE_CALL("Probe (an empty RPC)"), INFO_CALL("GetPluginInfo"), FS_CYCLE("publish+unpublish, filesystem"),
        BLOCK_CYCLE("publish+unpublish, raw block"), CLUTTERED_CYCLE("publish+unpublish, filesystem, %,d more mounts"),
        STATS("NodeGetVolumeStats of a published filesystem");

        final String label;

        Measure(String label) {
            this.label = label;
        }
    }

    /**
     * What one driver is asked, built before any timing. {@code stats} is the bench's request (volume and
     * staging path); {@code kubeletStats} kubelet's (csi_client.go sends the volume id and path only).
     */
    private record Subject(String name, Path socket, IdentityGrpc.IdentityBlockingStub identity,
                           NodeGrpc.NodeBlockingStub node, Publication fs, Publication block,
                           NodeGetVolumeStatsRequest stats, NodeGetVolumeStatsRequest kubeletStats,
                           Samples[][] samples) {
        Subject(String name, Path socket, IdentityGrpc.IdentityBlockingStub identity, NodeGrpc.NodeBlockingStub node,
                Publication fs, Publication block, NodeGetVolumeStatsRequest stats) {
            this(name, socket, identity, node, fs, block, stats, NodeGetVolumeStatsRequest.newBuilder()
                    .setVolumeId(stats.getVolumeId()).setVolumePath(stats.getVolumePath()).build(), newSamples());
        }

        private static Samples[][] newSamples() {
            Samples[][] s = new Samples[Client.values().length][Measure.values().length];
            for (Samples[] row : s) {
                for (int i = 0; i < row.length; i++) {
                    row[i] = new Samples();
                }
            }
            return s;
        }

        Samples of(Client c, Measure m) {
            return samples[c.ordinal()][m.ordinal()];
        }
    }

    /** One staged volume's requests. */
    private record Publication(NodeStageVolumeRequest stage, NodePublishVolumeRequest publish,
                               NodeUnpublishVolumeRequest unpublish, NodeUnstageVolumeRequest unstage) {
    }

    /** The tail goal: the publish cycle's p99 at most twice its median. */
    private static final double TAIL_LIMIT = 2.0;

    FigureG(BenchRun run) {
        super(run);
    }

    void measure(PluginProcess p, ReferenceDriver ref) throws Exception {
        log("(g) side by side with csi-driver-host-path, with kubelet's client and two others");
        List<Volume> loops = new ArrayList<>();
        Volume fsVolume = volumes.create(p, "g", 1, 16 * MIB).get(0);
        loops.add(fsVolume);
        Volume rawVolume = volumes.create(p, "graw", 1, 16 * MIB).get(0);
        loops.add(rawVolume);
        Subject blocknode = new Subject("blocknode", p.socket, p.client().identity(), p.client().node(),
                new Publication(fsVolume.stage.toBuilder().setVolumeCapability(asKubelet(
                        fsVolume.stage.getVolumeCapability())).build(), fsVolume.publish.toBuilder()
                        .setVolumeCapability(asKubelet(fsVolume.publish.getVolumeCapability())).build(),
                        fsVolume.unpublish, fsVolume.unstage),
                blocknodeRaw(p.kubelet, rawVolume),
                NodeGetVolumeStatsRequest.newBuilder().setVolumeId(fsVolume.id)
                        .setVolumePath(fsVolume.target.toString()).setStagingTargetPath(fsVolume.staging.toString())
                        .build());
        TailAttribution tail = new TailAttribution(fsVolume.id);
        List<String> created = new ArrayList<>();
        Subject reference;
        List<Subject> staged = new ArrayList<>();
        try (KubeletClient go = new KubeletClient(o.kubeletClient(), o.pidFile())) {
            try {
                reference = referenceSubject(ref, created);
                for (Subject s : List.of(blocknode, reference)) { // as kubelet stages: a connection per call
                    Samples stage = new Samples();
                    go.batch("stage", Client.KUBELET.mode, 1, s.socket(), stage, s.fs().stage());
                    go.batch("stage", Client.KUBELET.mode, 1, s.socket(), stage, s.block().stage());
                    staged.add(s);
                    report.detail("g", s.name() + ": NodeStageVolume with kubelet's client, filesystem and raw block: "
                            + Samples.fmt(stage.min()) + ", " + Samples.fmt(stage.max()) + " (once each; not a figure)");
                }
                Subject[] both = {blocknode, reference};
                for (Subject s : both) { // warm-up: the JIT, connections, page cache
                    TailAttribution traced = s == blocknode ? tail : null;
                    for (Client c : Client.values()) {
                        boolean jit = c == Client.JAVA; // the Go client has no JIT of its own to warm
                        calls(go, s, c, Measure.PROBE_CALL, jit ? 2000 : 500, false);
                        calls(go, s, c, Measure.INFO_CALL, jit ? 500 : 200, false);
                        cycles(go, s, c, s.fs(), Measure.FS_CYCLE, jit ? 300 : 100, false, traced);
                        cycles(go, s, c, s.block(), Measure.BLOCK_CYCLE, jit ? 300 : 100, false, null);
                        stats(go, s, c, jit ? 300 : 100, false, traced);
                    }
                }
                int perRound = Math.max(2, o.cycles() / o.rounds());
                for (int round = 0; round < o.rounds(); round++) {
                    for (Subject s : round % 2 == 0 ? both : new Subject[] {reference, blocknode}) {
                        TailAttribution traced = s == blocknode ? tail : null;
                        for (Client c : rotated(round)) {
                            calls(go, s, c, Measure.PROBE_CALL, 5 * perRound, true);
                            calls(go, s, c, Measure.INFO_CALL, 5 * perRound, true);
                            cycles(go, s, c, s.fs(), Measure.FS_CYCLE, perRound, true, traced);
                            cycles(go, s, c, s.block(), Measure.BLOCK_CYCLE, perRound, true, null);
                            stats(go, s, c, 5 * perRound, true, traced);
                        }
                    }
                }
                Path clutter = o.work().resolve("clutter-g");
                Files.createDirectories(clutter);
                volumes.run(List.of("clutter-mount", clutter.toString(), Integer.toString(o.clutter())));
                try {
                    for (Subject s : both) {
                        for (Client c : Client.values()) {
                            cycles(go, s, c, s.fs(), Measure.CLUTTERED_CYCLE, 30, false, s == blocknode ? tail : null);
                        }
                    }
                    for (int round = 0; round < o.rounds() / 2; round++) {
                        for (Subject s : round % 2 == 0 ? both : new Subject[] {reference, blocknode}) {
                            for (Client c : rotated(round)) {
                                cycles(go, s, c, s.fs(), Measure.CLUTTERED_CYCLE, perRound, true,
                                        s == blocknode ? tail : null);
                            }
                        }
                    }
                } finally {
                    volumes.run(List.of("clutter-umount", clutter.toString(), Integer.toString(o.clutter())));
                }
                report(blocknode, reference, perRound);
                report.diag("(g) where blocknode's filesystem cycles went, those of the grpc-java client ("
                        + PluginProcess.GC_LOG + " and the plugin's per-call log lines): "
                        + tail.describe(p.log, p.dir.resolve(PluginProcess.GC_LOG)));
            } finally {
                for (Subject s : staged) {
                    unstage(go, s, s.fs());
                    unstage(go, s, s.block());
                }
            }
        } finally {
            for (String id : created) {
                ref.client().controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
            }
            volumes.destroy(loops);
        }
    }

    /**
     * Unstages with kubelet's client, or says why not (a failed run's volume may still be published): the
     * run's own failure, if any, is what propagates; bench.sh's trap takes off what is left.
     */
    private static void unstage(KubeletClient go, Subject s, Publication v) {
        try {
            go.batch("unstage", Client.KUBELET.mode, 1, s.socket(), null, v.unstage());
        } catch (IOException | RuntimeException e) {
            log("(g) cannot unstage " + v.unstage().getVolumeId() + " of " + s.name() + ": " + e.getMessage());
        }
    }

    /**
     * Calls made again because the reference driver could not read a consistent mount table (mount-utils
     * reads /proc/mounts until two reads agree, three tries): other mounts coming and going on a shared
     * machine. Kubelet retries such an operation; so does the bench, counting them (a batch is made again
     * whole: its calls are idempotent).
     */
    private int retried;

    private interface Batch {
        void run() throws IOException;
    }

    private void retrying(Batch batch) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                batch.run();
                return;
            } catch (IOException | RuntimeException e) {
                if (attempt >= 5 || e.getMessage() == null || !e.getMessage().contains("consistent content of /proc/mounts")) {
                    throw e;
                }
                retried++;
            }
        }
    }

    /** The clients in the order of a round: each goes first in turn. */
    private static List<Client> rotated(int round) {
        Client[] all = Client.values();
        List<Client> order = new ArrayList<>();
        for (int i = 0; i < all.length; i++) {
            order.add(all[(round + i) % all.length]);
        }
        return order;
    }

    private void calls(KubeletClient go, Subject s, Client c, Measure m, int n, boolean record)
            throws IOException {
        Samples into = record ? s.of(c, m) : null;
        if (c.mode != null) {
            go.batch(m == Measure.PROBE_CALL ? "probe" : "info", c.mode, n, s.socket(), into);
            return;
        }
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            if (m == Measure.PROBE_CALL) {
                s.identity().probe(PROBE);
            } else {
                s.identity().getPluginInfo(INFO);
            }
            if (into != null) {
                into.add(System.nanoTime() - t);
            }
        }
    }

    /**
     * @param tail counts the cycles' publishes, and times grpc-java's measured filesystem cycles (null:
     *             neither)
     */
    private void cycles(KubeletClient go, Subject s, Client c, Publication v, Measure m, int n,
                               boolean record, TailAttribution tail) throws IOException {
        if (c.mode != null) {
            retrying(() -> go.batch("cycle", c.mode, n, s.socket(), record ? s.of(c, m) : null, v.publish(),
                    v.unpublish()));
            for (int i = 0; tail != null && i < n; i++) {
                tail.published();
            }
            return;
        }
        for (int i = 0; i < n; i++) {
            long[] timed = new long[2];
            retrying(() -> {
                timed[0] = System.nanoTime();
                s.node().nodePublishVolume(v.publish());
                s.node().nodeUnpublishVolume(v.unpublish());
                timed[1] = System.nanoTime() - timed[0];
            });
            long t = timed[0];
            long nanos = timed[1];
            if (record) {
                s.of(c, m).add(nanos);
            }
            if (tail != null && record && m == Measure.FS_CYCLE) {
                tail.cycle(t, nanos);
            } else if (tail != null) {
                tail.published();
            }
        }
    }

    /**
     * Stats of the filesystem volume while it is published, as kubelet asks for a pod's volume (with kubelet's
     * client, its NodeGetCapabilities first, on a connection of its own, inside the timing).
     */
    private void stats(KubeletClient go, Subject s, Client c, int n, boolean record, TailAttribution tail)
            throws IOException {
        if (tail != null) {
            tail.published();
        }
        if (c.mode != null) {
            retrying(() -> go.batch("stats", c.mode, n, s.socket(), record ? s.of(c, Measure.STATS) : null,
                    s.fs().publish(), s.kubeletStats(), s.fs().unpublish()));
            return;
        }
        retrying(() -> s.node().nodePublishVolume(s.fs().publish()));
        try {
            for (int i = 0; i < n; i++) {
                long t = System.nanoTime();
                s.node().nodeGetVolumeStats(s.stats());
                if (record) {
                    s.of(c, Measure.STATS).add(System.nanoTime() - t);
                }
            }
        } finally {
            retrying(() -> s.node().nodeUnpublishVolume(s.fs().unpublish()));
        }
    }

    /** blocknode's raw block volume at kubelet's volumeDevices paths (the local transport's loop device). */
    private static Publication blocknodeRaw(Path kubelet, Volume v) throws Exception {
        Path staging = kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/staging").resolve(v.id);
        Path target = kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/publish").resolve(v.id).resolve("pod-g");
        Files.createDirectories(staging);
        Files.createDirectories(target.getParent());
        return publication(v.id, staging, target, RAW, v.stage.getVolumeContextMap());
    }

    /** The reference driver's two volumes, made by its own CreateVolume, at the same kubelet paths. */
    private Subject referenceSubject(ReferenceDriver ref, List<String> created) throws Exception {
        VolumeCapability mount = VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.getDefaultInstance())
                .setAccessMode(WRITER).build();
        CreateVolumeResponse fs = create(ref, "g", mount, created);
        CreateVolumeResponse raw = create(ref, "graw", RAW, created);
        String fsId = fs.getVolume().getVolumeId();
        String rawId = raw.getVolume().getVolumeId();
        Path fsStaging = ref.kubelet.resolve("plugins/kubernetes.io/csi").resolve(ReferenceDriver.DRIVER)
                .resolve("g").resolve("globalmount");
        Path fsTarget = ref.kubelet.resolve("pods/pod-g/volumes/kubernetes.io~csi/g/mount");
        Files.createDirectories(fsStaging);
        Files.createDirectories(fsTarget.getParent());
        Path rawStaging = ref.kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/staging/graw");
        Path rawTarget = ref.kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/publish/graw/pod-g");
        Files.createDirectories(rawStaging);
        Files.createDirectories(rawTarget.getParent());
        return new Subject("csi-driver-host-path", ref.socket, ref.client().identity(), ref.client().node(),
                publication(fsId, fsStaging, fsTarget, mount, fs.getVolume().getVolumeContextMap()),
                publication(rawId, rawStaging, rawTarget, RAW, raw.getVolume().getVolumeContextMap()),
                NodeGetVolumeStatsRequest.newBuilder().setVolumeId(fsId).setVolumePath(fsTarget.toString())
                        .setStagingTargetPath(fsStaging.toString()).build());
    }

    /** The capability as kubelet sends it to a node service with SINGLE_NODE_MULTI_WRITER. */
    private static VolumeCapability asKubelet(VolumeCapability capability) {
        return capability.toBuilder().setAccessMode(KUBELET_RWO).build();
    }

    private static CreateVolumeResponse create(ReferenceDriver ref, String name, VolumeCapability capability,
                                               List<String> created) {
        CreateVolumeResponse response = ref.client().controller().createVolume(CreateVolumeRequest.newBuilder()
                .setName(name).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(16 * MIB))
                .addVolumeCapabilities(capability).build());
        created.add(response.getVolume().getVolumeId());
        return response;
    }

    private static Publication publication(String id, Path staging, Path target, VolumeCapability created,
                                           Map<String, String> context) {
        VolumeCapability capability = asKubelet(created);
        return new Publication(
                NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                        .setVolumeCapability(capability).putAllVolumeContext(context).build(),
                NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                        .setTargetPath(target.toString()).setVolumeCapability(capability)
                        .putAllVolumeContext(context).build(),
                NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build(),
                NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString()).build());
    }

    /**
     * The goals under kubelet's pattern: the filesystem cycle >= 2.5x at the median and p90 and 2x
     * at p99, raw block 4x / 3.5x / 3x, stats 3x / 3x / 2.5x, Probe 1.1x at the median and 1.0x at p99 (GetPluginInfo
     * has none); blocknode's p99 / median of a cycle <= 2. The cluttered cycle keeps the filesystem cycle's. The
     * other clients as details.
     */
    private void report(Subject blocknode, Subject reference, int perRound) {
        String cluttered = String.format(Locale.ROOT, Measure.CLUTTERED_CYCLE.label, o.clutter());
        for (Measure m : Measure.values()) {
            String label = m == Measure.CLUTTERED_CYCLE ? cluttered : m.label;
            Samples b = blocknode.of(Client.KUBELET, m);
            Samples r = reference.of(Client.KUBELET, m);
            double[] limits = switch (m) {
                case PROBE_CALL -> new double[] {1.1, 0, 1.0};
                case INFO_CALL -> new double[] {0, 0, 0};
                case STATS -> new double[] {3.0, 3.0, 2.5};
                case BLOCK_CYCLE -> new double[] {4.0, 3.5, 3.0};
                default -> new double[] {2.5, 2.5, 2.0};
            };
            List<String> quantiles = List.of("median", "p90", "p99");
            for (int q = 0; q < quantiles.size(); q++) {
                row(label, quantiles.get(q), quantile(quantiles.get(q)), b, r, limits[q]);
            }
            if (m == Measure.FS_CYCLE || m == Measure.BLOCK_CYCLE) {
                tailRow(label, b, r);
            }
            for (Client c : Client.values()) {
                Samples bc = blocknode.of(c, m);
                Samples rc = reference.of(c, m);
                report.detail("g", String.format(Locale.ROOT, "%s, %s: host-path / blocknode %.2fx / %.2fx / %.2fx"
                                + " (median / p90 / p99); blocknode %s; csi-driver-host-path %s", label, c.label,
                        (double) rc.median() / bc.median(), (double) rc.p90() / bc.p90(),
                        (double) rc.p99() / bc.p99(), bc.summary(), rc.summary()));
            }
        }
        for (Subject s : List.of(blocknode, reference)) {
            report.diag(String.format(Locale.ROOT, "(g) %s: what kubelet's pattern adds (grpc-go, kubelet's"
                            + " minus one connection, median / p99): Probe %s / %s, the filesystem cycle (five"
                            + " connections: three NodeGetCapabilities, publish, unpublish) %s / %s, stats (two: one"
                            + " NodeGetCapabilities) %s / %s", s.name(),
                    delta(s, Measure.PROBE_CALL, Samples::median), delta(s, Measure.PROBE_CALL, Samples::p99),
                    delta(s, Measure.FS_CYCLE, Samples::median), delta(s, Measure.FS_CYCLE, Samples::p99),
                    delta(s, Measure.STATS, Samples::median), delta(s, Measure.STATS, Samples::p99)));
        }
        report.detail("g", "the table's rows: kubelet's pattern (grpc-go v1.85, grpc.Dial + the call + Close for every"
                + " call, as pkg/volume/csi/csi_client.go, with kubelet v1.37's NodeGetCapabilities calls each on its"
                + " own connection: three before a filesystem publish, one before a raw block publish and before"
                + " stats; ReadWriteOnce as SINGLE_NODE_MULTI_WRITER); the lines above: each client's ratios and"
                + " values");
        report.detail("g", o.rounds() + " rounds, the order of drivers alternating and of clients rotating; per"
                + " driver, client and round " + perRound + " cycles of each kind and " + 5 * perRound
                + " Probes, GetPluginInfos and stats calls (after warm-up per driver: grpc-java 2,000 Probes, 500"
                + " GetPluginInfos, 300 cycles of each kind and 300 stats calls; each grpc-go mode 500, 200, 100 and"
                + " 100); the cluttered cycles in " + o.rounds() / 2 + " rounds after 30 of warm-up each");
        report.detail("g", "batches made again because csi-driver-host-path could not read a consistent mount"
                + " table (other mounts changing on the machine; kubelet would retry too): " + retried);
        report.detail("g", "blocknode: the local transport on loop devices (ext4 formatted by the plugin); the"
                + " reference driver: its own CreateVolume (a directory; a file on a loop device for raw block),"
                + " run with a PATH holding only its image's tools; both staged and unstaged with kubelet's client");
    }

    private static String delta(Subject s, Measure m, ToLongFunction<Samples> at) {
        long d = at.applyAsLong(s.of(Client.KUBELET, m)) - at.applyAsLong(s.of(Client.GO_SHARED, m));
        return d < 0 ? "-" + Samples.fmt(-d) : Samples.fmt(d);
    }

    /** blocknode's own tail: p99 / median of a cycle, against the reference driver's (for the record). */
    private void tailRow(String label, Samples blocknode, Samples reference) {
        double tail = (double) blocknode.p99() / blocknode.median();
        report.row("g", label + ", blocknode's p99 / median", Samples.fmt(blocknode.p99()) + " / "
                        + Samples.fmt(blocknode.median()), String.format(Locale.ROOT, "host-path's %.2f",
                        (double) reference.p99() / reference.median()), tail,
                String.format(Locale.ROOT, "<= %.1f", TAIL_LIMIT), tail <= TAIL_LIMIT, tail / TAIL_LIMIT);
    }

    private static ToLongFunction<Samples> quantile(String q) {
        return switch (q) {
            case "median" -> Samples::median;
            case "p90" -> Samples::p90;
            default -> Samples::p99;
        };
    }

    /** One quantile as a row; limit 0 means no goal at that quantile. */
    private void row(String label, String q, ToLongFunction<Samples> at, Samples blocknode, Samples reference,
                     double limit) {
        double b = at.applyAsLong(blocknode);
        double r = at.applyAsLong(reference);
        double ratio = r / b;
        boolean hasGoal = limit > 0;
        report.row("g", label + ", " + q, Samples.fmt(b), "host-path " + Samples.fmt(r), ratio,
                hasGoal ? String.format(Locale.ROOT, ">= %.1fx", limit) : "-",
                hasGoal ? ratio >= limit : null, hasGoal ? limit / ratio : 0);
    }
}
