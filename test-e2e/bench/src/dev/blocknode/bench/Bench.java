package dev.blocknode.bench;

import dev.blocknode.bench.Volumes.Volume;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static dev.blocknode.bench.BenchRun.MIB;
import static dev.blocknode.bench.BenchRun.log;

/**
 * blocknode's benchmark (figures a-g, k and l of test-e2e/bench/README.md). Every figure is a ratio to a baseline
 * measured in the same run, interleaved with it where the two can alternate, so that a noisy shared
 * machine moves both; absolute values are printed for the record. Run by bench.sh, which builds the
 * pieces, owns the work directory and cleans up after any exit.
 */
public final class Bench {

    private final BenchOptions o;
    private final BenchRun run;

    private Bench(BenchOptions o) throws IOException {
        this.o = o;
        this.run = new BenchRun(o);
    }

    public static void main(String[] args) throws Exception {
        BenchOptions options = BenchOptions.parse(args);
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
            run.report.note("Plugin under test for a-d: " + imageName + ", --log-format=json to a file, "
                    + "--metrics-address on loopback, state and kubelet dirs on the root disk (" + fsOf(o.work()) + "); "
                    + "plus a GC log (-Xlog:gc to a file: a line per collection), for (g)'s tail attribution.");

            if (!o.figures().equals(BenchOptions.ALL_FIGURES)) {
                run.report.note("A PARTIAL RUN: figures " + o.figures() + " only (BENCH_FIGURES)");
            }
            Path tmpfs = o.work().resolve("tmpfs");
            Files.createDirectories(tmpfs);
            Volumes.runCommand(List.of("mount", "-t", "tmpfs", "-o", "size=64m,mode=700", "bench-state", tmpfs.toString()));
            try {
                List<String> p1Flags = new ArrayList<>(image);
                p1Flags.add(PluginProcess.gcLogFlag(o.work().resolve("p1")));
                p1Flags.addAll(o.p1ExtraFlags());
                if (!o.p1ExtraFlags().isEmpty()) {
                    run.report.note("EXTRA FLAGS for the plugin of a-d (not the image's): " + o.p1ExtraFlags());
                }
                PluginProcess main = run.startPlugin("p1", p1Flags, null);
                Volume a = null;
                if (o.has('a')) {
                    PluginProcess onTmpfs = run.startPlugin("p1t", image, tmpfs.resolve("p1t-state"));
                    a = new FigureA(run).measure(main, onTmpfs);
                    onTmpfs.close();
                }
                if (o.has('b')) {
                    if (a == null) {
                        a = run.volumes.create(main, "a", 1, 16 * MIB).get(0);
                        main.client().node().nodeStageVolume(a.stage);
                    }
                    new FigureB(run).measure(main, a);
                }
                if (a != null) {
                    Volumes.teardown(main.client().node(), List.of(a), 1);
                    run.volumes.destroy(List.of(a));
                }
                FigureC.Burst imageBurst = o.has('c') ? new FigureC(run).measure(main, "image flags") : null;
                if (o.has('d')) {
                    new FigureD(run).measure(main);
                }
                if (o.has('g')) {
                    if (o.reference() == null) {
                        run.report.note("FIGURE G NOT RUN: no reference driver binary (test-e2e/sidecars/get.sh"
                                + " hostpathplugin found none; see test-e2e/target/bench/reference.log)");
                    } else if (o.kubeletClient() == null) {
                        run.report.note("FIGURE G NOT RUN: no Go client (bench.sh builds test-e2e/bench/kubeletclient"
                                + " with go)");
                    } else {
                        try (ReferenceDriver reference = ReferenceDriver.start(o.reference(),
                                o.work().resolve("hostpath"), o.pidFile())) {
                            new FigureG(run).measure(main, reference);
                        }
                    }
                }
                main.close();
                if (o.has('e')) {
                    FigureC.Burst defaultBurst = null;
                    if (imageBurst != null) {
                        PluginProcess defaults = run.startPlugin("p2", List.of(), null);
                        defaultBurst = new FigureC(run).burst(defaults, "default flags");
                        defaults.close();
                    }
                    new FigureE(run).measure(image, imageBurst, defaultBurst);
                }
                if (o.has('f')) {
                    new FigureF(run).measure();
                }
                if (o.has('k')) {
                    new FigureK(run).measure();
                }
                if (o.has('l')) {
                    new FigureL(run).measure();
                }
                if (o.has('a')) {
                    new Diagnostics(run).flagsExperiment(image);
                    new Diagnostics(run).recordStore(tmpfs);
                }
            } finally {
                for (PluginProcess p : run.plugins) {
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
            run.report.note("THE RUN FAILED: " + e);
            e.printStackTrace();
        } finally {
            run.cleanup();
            String loadAfter = Files.readString(Path.of("/proc/loadavg")).strip();
            run.report.machine(o, run.cores, loadBefore, loadAfter, (System.nanoTime() - started) / 1e9);
            String text = run.report.render();
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

    private static String fsOf(Path path) {
        try {
            return Files.getFileStore(path).type();
        } catch (IOException e) {
            return "?";
        }
    }
}
