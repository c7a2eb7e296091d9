package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static dev.blocknode.bench.BenchRun.MIB;
import static dev.blocknode.bench.BenchRun.probePair;
import static dev.blocknode.bench.BenchRun.cycle;
import static dev.blocknode.bench.BenchRun.log;

/** Where the per-call time goes: the JIT tier the image chose, and the record store's and syscalls' costs. */
final class Diagnostics extends Figure {

    Diagnostics(BenchRun run) {
        super(run);
    }

    /**
     * The cycle and the Probe pair on two plugins at once, one with the image's flags (C1 only, serial GC,
     * AOT cache) and one with the JVM's defaults (C2, G1), interleaved after a warm-up long enough for C2:
     * how much of the per-call cost is the JIT tier the image chose for footprint.
     */
    void flagsExperiment(List<String> image) throws Exception {
        log("diagnostics: the cycle with the image's flags vs the JVM's defaults, interleaved");
        try (PluginProcess pi = run.startPlugin("x-image", image, null);
             PluginProcess pd = run.startPlugin("x-default", List.of(), null)) {
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

    /** Record-store and syscall costs in a JVM with the image's flags: where the per-call time goes. */
    void recordStore(Path tmpfs) throws Exception {
        log("diagnostics: record store and syscalls in a JVM with the image's flags");
        Path record = o.work().resolve("record");
        if (!Files.exists(record)) {
            return;
        }
        List<String> command = o.imageJvm(List.of(), "dev.blocknode.bench.Micro", record.toString(),
                o.work().resolve("micro-disk").toString(), tmpfs.resolve("micro").toString(), tmpfs.toString());
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
}
