package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.NodeGrpc;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.blocknode.bench.BenchRun.MIB;
import static dev.blocknode.bench.BenchRun.PROBE;
import static dev.blocknode.bench.BenchRun.INFO;
import static dev.blocknode.bench.BenchRun.histogram;
import static dev.blocknode.bench.BenchRun.log;

/** (d) NodeGetVolumeStats over many staged volumes against Probe, one by one and in sweeps. */
final class FigureD extends Figure {

    private static final int STATS = 0;
    private static final int PROBE_CALL = 1;
    private static final int INFO_CALL = 2;

    FigureD(BenchRun run) {
        super(run);
    }

    void measure(PluginProcess p) throws Exception {
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
            run.profileStart(p);
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
            run.profileStop(p, "d-sweeps");
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
}
