package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;
import dev.blocknode.csi.v1.NodeGrpc;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.blocknode.bench.BenchRun.MIB;
import static dev.blocknode.bench.BenchRun.log;

/** (c) a burst of volumes staged and published at once against one at a time. */
final class FigureC extends Figure {

    FigureC(BenchRun run) {
        super(run);
    }

    record Burst(String flags, long one, long wall, long rssBeforeKib, long hwmKib, long rssAfterKib,
                 Samples perVolume, long teardownWall, long teardownHwmKib, int failures) {
    }

    Burst measure(PluginProcess p, String flags) throws Exception {
        log("(c) " + o.burst() + " volumes staged+published concurrently vs one");
        Burst b = burst(p, flags);
        double ideal = (double) b.one() * o.burst() / run.cores;
        double ratio = b.wall() / ideal;
        report.row("c", o.burst() + " volumes staged+published at once (" + o.burst() + " client threads), wall",
                Samples.fmt(b.wall()), String.format(Locale.ROOT, "one volume %s x %d / %d cores = %s",
                        Samples.fmt(b.one()), o.burst(), run.cores, Samples.fmt(ideal)), ratio, "<= 3x", ratio <= 3,
                ratio / 3);
        report.detail("c", "one volume (blank 16 MiB loop file: blkid probe, mkfs.ext4, mount, publish), median of 10"
                + " (5 before the burst after 1 warm-up, 5 after it): " + Samples.fmt(b.one()));
        report.detail("c", "burst, per volume stage+publish latency: " + b.perVolume().summary());
        report.detail("c", "burst teardown (unpublish+unstage, " + o.burst() + " threads), wall: "
                + Samples.fmt(b.teardownWall()) + ", the plugin's VmHWM during it (reset before it) "
                + Samples.mib(b.teardownHwmKib()) + "; failed calls: " + b.failures());
        report.detail("c", "plugin memory (" + flags + "): VmRSS before the burst " + Samples.mib(b.rssBeforeKib())
                + ", VmHWM during it " + Samples.mib(b.hwmKib()) + ", VmRSS after it " + Samples.mib(b.rssAfterKib())
                + " (figure e's goal)");
        return b;
    }

    /**
     * One volume's stage+publish (median of 10: 1 warm-up and 5 before the burst, 5 after it), and the burst;
     * VmHWM is reset right before the burst, and again before its teardown.
     */
    Burst burst(PluginProcess p, String flags) throws Exception {
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
        p.resetPeakRss();
        long td = System.nanoTime();
        int failed = Volumes.teardown(node, vs, o.burst());
        long teardown = System.nanoTime() - td;
        long teardownHwm = p.statusKib("VmHWM");
        volumes.destroy(vs);
        if (failure != null) {
            throw new IOException("a volume of the burst failed: " + failure.getMessage(), failure);
        }
        singles(p, "one-after", 5, one);
        return new Burst(flags, one.median(), wall, rssBefore, hwm, rssAfter, perVolume, teardown, teardownHwm, failed);
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
}
