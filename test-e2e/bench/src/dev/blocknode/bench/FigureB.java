package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;
import dev.blocknode.csi.v1.NodeGrpc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

import static dev.blocknode.bench.BenchRun.cycle;
import static dev.blocknode.bench.BenchRun.log;

/** (b) the cycle with thousands of unrelated mounts on the node against the cycle without. */
final class FigureB extends Figure {

    FigureB(BenchRun run) {
        super(run);
    }

    private static int mountCount() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).size();
    }

    void measure(PluginProcess p, Volume a) throws Exception {
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
                    raw[state].addAll(run.rawPairs(a.staging, rawTarget, perBlock / 2, false));
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
}
