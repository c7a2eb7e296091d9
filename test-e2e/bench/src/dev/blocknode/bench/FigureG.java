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
 * (g) blocknode side by side with csi-driver-host-path, the kubernetes-csi reference driver: the same client,
 * the same requests in kubelet's layout, interleaved by round (the order alternating), on the same machine at
 * the same time. Ratios are reference / blocknode: above 1 blocknode is faster.
 */
final class FigureG extends Figure {

    /** A ReadWriteOnce access mode for either kind of volume. */
    private static final VolumeCapability.AccessMode WRITER = VolumeCapability.AccessMode.newBuilder()
            .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER).build();
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

    /** What one driver is asked, built before any timing. */
    private record Subject(String name, IdentityGrpc.IdentityBlockingStub identity, NodeGrpc.NodeBlockingStub node,
                           Publication fs, Publication block, NodeGetVolumeStatsRequest stats, Samples[] samples) {
        Subject(String name, IdentityGrpc.IdentityBlockingStub identity, NodeGrpc.NodeBlockingStub node,
                Publication fs, Publication block, NodeGetVolumeStatsRequest stats) {
            this(name, identity, node, fs, block, stats, newSamples());
        }

        private static Samples[] newSamples() {
            Samples[] s = new Samples[Measure.values().length];
            for (int i = 0; i < s.length; i++) {
                s[i] = new Samples();
            }
            return s;
        }

        Samples of(Measure m) {
            return samples[m.ordinal()];
        }
    }

    /** One staged volume's requests. */
    private record Publication(NodeStageVolumeRequest stage, NodePublishVolumeRequest publish,
                               NodeUnpublishVolumeRequest unpublish, NodeUnstageVolumeRequest unstage) {
    }

    /** The tail goal of issue 18: the publish cycle's p99 at most twice its median. */
    private static final double TAIL_LIMIT = 2.0;

    FigureG(BenchRun run) {
        super(run);
    }

    void measure(PluginProcess p, ReferenceDriver ref) throws Exception {
        log("(g) side by side with csi-driver-host-path");
        List<Volume> loops = new ArrayList<>();
        Volume fsVolume = volumes.create(p, "g", 1, 16 * MIB).get(0);
        loops.add(fsVolume);
        Volume rawVolume = volumes.create(p, "graw", 1, 16 * MIB).get(0);
        loops.add(rawVolume);
        Subject blocknode = new Subject("blocknode", p.client().identity(), p.client().node(),
                new Publication(fsVolume.stage, fsVolume.publish, fsVolume.unpublish, fsVolume.unstage),
                blocknodeRaw(p.kubelet, rawVolume),
                NodeGetVolumeStatsRequest.newBuilder().setVolumeId(fsVolume.id)
                        .setVolumePath(fsVolume.target.toString()).setStagingTargetPath(fsVolume.staging.toString())
                        .build());
        TailAttribution tail = new TailAttribution(fsVolume.id);
        List<String> created = new ArrayList<>();
        Subject reference = null;
        List<Subject> staged = new ArrayList<>();
        try {
            reference = referenceSubject(ref, created);
            for (Subject s : List.of(blocknode, reference)) {
                s.node().nodeStageVolume(s.fs().stage());
                s.node().nodeStageVolume(s.block().stage());
                staged.add(s);
            }
            Subject[] both = {blocknode, reference};
            for (Subject s : both) { // warm-up: the JIT, connection, page cache
                TailAttribution traced = s == blocknode ? tail : null;
                calls(s, Measure.PROBE_CALL, 2000, false);
                calls(s, Measure.INFO_CALL, 500, false);
                cycles(s, s.fs(), Measure.FS_CYCLE, 300, false, traced);
                cycles(s, s.block(), Measure.BLOCK_CYCLE, 300, false, null);
                stats(s, 300, false, traced);
            }
            int perRound = Math.max(2, o.cycles() / o.rounds());
            for (int round = 0; round < o.rounds(); round++) {
                for (Subject s : round % 2 == 0 ? both : new Subject[] {reference, blocknode}) {
                    TailAttribution traced = s == blocknode ? tail : null;
                    calls(s, Measure.PROBE_CALL, 5 * perRound, true);
                    calls(s, Measure.INFO_CALL, 5 * perRound, true);
                    cycles(s, s.fs(), Measure.FS_CYCLE, perRound, true, traced);
                    cycles(s, s.block(), Measure.BLOCK_CYCLE, perRound, true, null);
                    stats(s, 5 * perRound, true, traced);
                }
            }
            Path clutter = o.work().resolve("clutter-g");
            Files.createDirectories(clutter);
            volumes.run(List.of("clutter-mount", clutter.toString(), Integer.toString(o.clutter())));
            try {
                for (Subject s : both) {
                    cycles(s, s.fs(), Measure.CLUTTERED_CYCLE, 30, false, s == blocknode ? tail : null);
                }
                for (int round = 0; round < o.rounds() / 2; round++) {
                    for (Subject s : round % 2 == 0 ? both : new Subject[] {reference, blocknode}) {
                        cycles(s, s.fs(), Measure.CLUTTERED_CYCLE, perRound, true, s == blocknode ? tail : null);
                    }
                }
            } finally {
                volumes.run(List.of("clutter-umount", clutter.toString(), Integer.toString(o.clutter())));
            }
            report(blocknode, reference, perRound);
            report.diag("(g) where blocknode's filesystem cycles went (" + PluginProcess.GC_LOG
                    + " and the plugin's per-call log lines): " + tail.describe(p.log, p.dir.resolve(PluginProcess.GC_LOG)));
        } finally {
            for (Subject s : staged) {
                s.node().nodeUnstageVolume(s.fs().unstage());
                s.node().nodeUnstageVolume(s.block().unstage());
            }
            for (String id : created) {
                ref.client().controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
            }
            volumes.destroy(loops);
        }
    }

    private static void calls(Subject s, Measure m, int n, boolean record) {
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            if (m == Measure.PROBE_CALL) {
                s.identity().probe(PROBE);
            } else {
                s.identity().getPluginInfo(INFO);
            }
            if (record) {
                s.of(m).add(System.nanoTime() - t);
            }
        }
    }

    /** @param tail counts the cycles' publishes, and times the measured filesystem cycles (null: neither) */
    private static void cycles(Subject s, Publication v, Measure m, int n, boolean record, TailAttribution tail) {
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            s.node().nodePublishVolume(v.publish());
            s.node().nodeUnpublishVolume(v.unpublish());
            long nanos = System.nanoTime() - t;
            if (record) {
                s.of(m).add(nanos);
            }
            if (tail != null && record && m == Measure.FS_CYCLE) {
                tail.cycle(t, nanos);
            } else if (tail != null) {
                tail.published();
            }
        }
    }

    /** Stats of the filesystem volume while it is published, as kubelet asks for a pod's volume. */
    private static void stats(Subject s, int n, boolean record, TailAttribution tail) {
        s.node().nodePublishVolume(s.fs().publish());
        if (tail != null) {
            tail.published();
        }
        try {
            for (int i = 0; i < n; i++) {
                long t = System.nanoTime();
                s.node().nodeGetVolumeStats(s.stats());
                if (record) {
                    s.of(Measure.STATS).add(System.nanoTime() - t);
                }
            }
        } finally {
            s.node().nodeUnpublishVolume(s.fs().unpublish());
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
        return new Subject("csi-driver-host-path", ref.client().identity(), ref.client().node(),
                publication(fsId, fsStaging, fsTarget, mount, fs.getVolume().getVolumeContextMap()),
                publication(rawId, rawStaging, rawTarget, RAW, raw.getVolume().getVolumeContextMap()),
                NodeGetVolumeStatsRequest.newBuilder().setVolumeId(fsId).setVolumePath(fsTarget.toString())
                        .setStagingTargetPath(fsStaging.toString()).build());
    }

    private static CreateVolumeResponse create(ReferenceDriver ref, String name, VolumeCapability capability,
                                               List<String> created) {
        CreateVolumeResponse response = ref.client().controller().createVolume(CreateVolumeRequest.newBuilder()
                .setName(name).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(16 * MIB))
                .addVolumeCapabilities(capability).build());
        created.add(response.getVolume().getVolumeId());
        return response;
    }

    private static Publication publication(String id, Path staging, Path target, VolumeCapability capability,
                                           Map<String, String> context) {
        return new Publication(
                NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                        .setVolumeCapability(capability).putAllVolumeContext(context).build(),
                NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                        .setTargetPath(target.toString()).setVolumeCapability(capability)
                        .putAllVolumeContext(context).build(),
                NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build(),
                NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString()).build());
    }

    /** The goals: cycles >= 5x and stats >= 8x at every quantile; empty RPCs >= 1.0 (median), 0.8 (p99). */
    private void report(Subject blocknode, Subject reference, int perRound) {
        String cluttered = String.format(Locale.ROOT, Measure.CLUTTERED_CYCLE.label, o.clutter());
        for (Measure m : Measure.values()) {
            String label = m == Measure.CLUTTERED_CYCLE ? cluttered : m.label;
            Samples b = blocknode.of(m);
            Samples r = reference.of(m);
            switch (m) {
                case PROBE_CALL, INFO_CALL -> {
                    row(label, "median", Samples::median, b, r, 1.0);
                    row(label, "p90", Samples::p90, b, r, 0);
                    row(label, "p99", Samples::p99, b, r, 0.8);
                }
                case STATS -> {
                    for (String q : List.of("median", "p90", "p99")) {
                        row(label, q, quantile(q), b, r, 8.0);
                    }
                }
                default -> {
                    for (String q : List.of("median", "p90", "p99")) {
                        row(label, q, quantile(q), b, r, 5.0);
                    }
                    if (m != Measure.CLUTTERED_CYCLE) {
                        tailRow(label, b, r);
                    }
                }
            }
            report.detail("g", label + ", blocknode: " + b.summary());
            report.detail("g", label + ", csi-driver-host-path: " + r.summary());
        }
        report.detail("g", o.rounds() + " rounds, the order alternating; per driver and round " + perRound
                + " cycles of each kind and " + 5 * perRound + " Probes, GetPluginInfos and stats calls (after"
                + " 2,000 Probes, 500 GetPluginInfos, 300 cycles of each kind and 300 stats calls of warm-up);"
                + " the cluttered cycles in " + o.rounds() / 2 + " rounds after 30 of warm-up each");
        report.detail("g", "blocknode: the local transport on loop devices (ext4 formatted by the plugin); the"
                + " reference driver: its own CreateVolume (a directory; a file on a loop device for raw block),"
                + " run with a PATH holding only its image's tools");
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
