package dev.blocknode.bench;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import static dev.blocknode.bench.BenchRun.log;

/** (k) the repair loop's own cost with 100 healthy iSCSI volumes, on this CPU, over a fabricated node. */
final class FigureK extends Figure {

    static final int VOLUMES = 100;
    private static final int WARM_UP_PASSES = 10;
    private static final int MEASURED_PASSES = 30;
    private static final double DEFAULT_INTERVAL_S = 30;
    private static final double BENCH_SAN_INTERVAL_S = 5;
    private static final double GOAL_SHARE = 0.01;

    FigureK(BenchRun run) {
        super(run);
    }

    /**
     * {@link RepairLoopBench} in a JVM with the image's flags, its fabricated nodes on a tmpfs of their own (sysfs is
     * in memory; the state dir's page cache serves a pass's reads wherever it is).
     */
    void measure() throws Exception {
        log("(k) the repair loop over " + VOLUMES + " healthy iSCSI volumes against none, " + MEASURED_PASSES
                + " passes each after " + WARM_UP_PASSES + " of warm-up, two layouts of targets");
        List<String> output = onOwnTmpfs("k", "256m", tmpfs -> Volumes.runCommand(o.imageJvm(List.of(),
                "dev.blocknode.bench.RepairLoopBench", tmpfs.resolve("nodes").toString(), Integer.toString(VOLUMES),
                Integer.toString(WARM_UP_PASSES), Integer.toString(MEASURED_PASSES))));
        Map<String, String[]> lines = new LinkedHashMap<>();
        for (String line : output) {
            String[] parts = line.split("\t", -1);
            if (parts[0].startsWith("k-")) {
                lines.put(parts[0].substring(2), parts);
            }
        }
        for (String layout : List.of("one-per-volume", "shared")) {
            layout(layout, lines);
        }
    }

    private void layout(String layout, Map<String, String[]> lines) throws IOException {
        String[] full = lines.get(layout + "-" + VOLUMES);
        String[] empty = lines.get(layout + "-0");
        if (full == null || empty == null) {
            throw new IOException("RepairLoopBench printed no passes for " + layout + ": " + lines.keySet());
        }
        for (String node : List.of(layout + "-" + VOLUMES, layout + "-0")) {
            String[] commands = lines.get("commands-" + node);
            if (commands == null || !commands[1].equals("0")) {
                throw new IOException("figure k: a pass over healthy volumes ran commands (" + node + "): "
                        + (commands == null ? "none reported" : commands[2]));
            }
        }
        Samples cpu = samples(full[1]);
        Samples wall = samples(full[2]);
        Samples looks = samples(full[3]);
        Samples fixed = samples(empty[1]);
        if (looks.min() != VOLUMES || looks.max() != VOLUMES) {
            throw new IOException("figure k: a pass looked at " + looks.min() + "-" + looks.max() + " volumes, not "
                    + VOLUMES);
        }
        Samples perLook = new Samples();
        for (String pass : full[1].split(",")) {
            perLook.add(Math.max(0, Long.parseLong(pass) - fixed.median()) / VOLUMES);
        }
        double p90Share = cpu.p90() / (DEFAULT_INTERVAL_S * 1e9);
        String name = layout.equals("shared") ? "one target with the 100 LUNs (2 sessions)"
                : "a target per volume (200 sessions)";
        report.row("k", "repair loop's thread CPU per pass, " + VOLUMES + " healthy iSCSI volumes (2 paths each), "
                        + name + ", median / p90", Samples.fmt(cpu.median()) + " / " + Samples.fmt(cpu.p90()),
                "no volume: " + Samples.fmt(fixed.median()), (double) cpu.median() / Math.max(1, fixed.median()),
                "< 1% of a core at 30 s (p90)", p90Share < GOAL_SHARE, p90Share / GOAL_SHARE);
        report.detail("k", String.format(Locale.ROOT, "%s: per pass %s (thread CPU, the loop's own"
                        + " blocknode_path_repair_cpu_seconds_total), wall %s; per look (less the no-volume pass) %s;"
                        + " share of one core at the default 30 s interval %.3f%% (median) / %.3f%% (p90), at 5 s"
                        + " %.2f%% / %.2f%%; the pass without volumes %s; %s; commands run by the passes: none",
                name, cpu.summary(), wall.summary(), perLook.summary(), share(cpu.median(), DEFAULT_INTERVAL_S),
                share(cpu.p90(), DEFAULT_INTERVAL_S), share(cpu.median(), BENCH_SAN_INTERVAL_S),
                share(cpu.p90(), BENCH_SAN_INTERVAL_S), fixed.summary(), staged(lines, layout)));
        String[] phases = lines.get("phases-" + layout);
        if (phases != null) {
            report.diag("(k) " + name + ": where a pass goes (thread CPU, median of " + MEASURED_PASSES + "): "
                    + String.join(", ", List.of(phases).subList(1, phases.length))
                    + " (records: the candidates from the record store's memory; looks: PathRepair.mayRepair of each"
                    + " volume; sweep: the iSCSI transport's two sweeps, which read the login and scan journals)");
        }
    }

    private static String staged(Map<String, String[]> lines, String layout) {
        String[] staged = lines.get("staged-" + layout);
        return staged == null ? "" : "fabricated by the transport's own stage: " + staged[1];
    }

    private static double share(long ns, double intervalSeconds) {
        return ns / (intervalSeconds * 1e9) * 100;
    }

    private static Samples samples(String csv) {
        Samples samples = new Samples();
        for (String value : csv.split(",")) {
            samples.add(Long.parseLong(value));
        }
        return samples;
    }
}
