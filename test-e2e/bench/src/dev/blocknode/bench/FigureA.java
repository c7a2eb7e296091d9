package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGrpc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static dev.blocknode.bench.BenchRun.MIB;
import static dev.blocknode.bench.BenchRun.probePair;
import static dev.blocknode.bench.BenchRun.infoPair;
import static dev.blocknode.bench.BenchRun.cycle;
import static dev.blocknode.bench.BenchRun.serverMean;
import static dev.blocknode.bench.BenchRun.log;

/**
 * (a) the publish+unpublish cycle against two Probes and the raw bind pair, interleaved: a diagnostic without
 * a goal (what the cycle costs beyond the cheapest round trips and the kernel's bind pair). The per-call
 * goals are figure g's, against the reference driver with kubelet's client.
 */
final class FigureA extends Figure {

    FigureA(BenchRun run) {
        super(run);
    }

    Volume measure(PluginProcess p, PluginProcess pt) throws Exception {
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
        run.profileStart(p);
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
            raw.addAll(run.rawPairs(a.staging, rawTarget, k, false));
            for (int i = 0; i < k; i++) {
                cyclesTmpfs.add(cycle(nodeT, at, null, null));
            }
            rawMkdir.addAll(run.rawPairs(a.staging, rawMkdirTarget, k, true));
            for (int i = 0; i < k; i++) {
                infos.add(infoPair(identity));
            }
        }
        run.profileStop(p, "a-cycles");
        String after = p.scrape();
        Volumes.teardown(nodeT, List.of(at), 1);
        volumes.destroy(List.of(at));

        double base50 = probes.median() + raw.median();
        double base90 = probes.p90() + raw.p90();
        double r50 = cycles.median() / base50;
        double r90 = cycles.p90() / base90;
        report.row("a", "publish+unpublish cycle over the socket, median", Samples.fmt(cycles.median()),
                "Probe+Probe " + Samples.fmt(probes.median()) + " + raw pair " + Samples.fmt(raw.median()),
                r50, "-", null, 0);
        report.row("a", "publish+unpublish cycle over the socket, p90", Samples.fmt(cycles.p90()),
                "Probe+Probe " + Samples.fmt(probes.p90()) + " + raw pair " + Samples.fmt(raw.p90()),
                r90, "-", null, 0);
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
        report.diag("the goal's ratio against two GetPluginInfo calls (a constant; Probe answers its latest health"
                + " check, both on the event loop) + the raw pair, medians: " + Samples.ratio(ratioInfo));
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
}
