package dev.blocknode.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import static dev.blocknode.bench.BenchRun.log;

/**
 * (l) the plugin's own side of a SAN burst: N = 25-200 iSCSI volumes x 2 paths staged at once, then
 * unstaged at once, on this CPU, over a fabricated node; wall time, per-volume latency, CPU, commands, peak RSS.
 */
final class FigureL extends Figure {

    static final List<Integer> SIZES = List.of(25, 50, 100, 200);
    private static final int ROUNDS = 3;
    private static final List<String> LAYOUTS = List.of("shared", "one-per-volume");
    private static final double GOAL_BURST_S = 60;
    private static final double GOAL_FLAT = 1.5;
    private static final double GOAL_PEAK_MIB = 160;

    /** One burst as {@link StageBurstBench} printed it. */
    private record Burst(int n, int round, Map<String, String> values) {
        long value(String key) {
            return Long.parseLong(values.get(key));
        }

        long[] percentiles(String key) {
            String[] parts = values.get(key).split(",");
            return new long[]{Long.parseLong(parts[0]), Long.parseLong(parts[1]), Long.parseLong(parts[2])};
        }

        /** The plugin's CPU (the process's less the fabricated tools' and kernel's), per volume, of stage + drain. */
        double pluginCpuPerVolume() {
            long process = value("cpu_stage") + value("cpu_drain");
            long fake = value("fake_stage") + value("fake_drain");
            return Math.max(0, process - fake) / (double) n;
        }
    }

    FigureL(BenchRun run) {
        super(run);
    }

    /** {@link StageBurstBench} in a JVM with the image's flags, its fabricated nodes on a tmpfs of their own. */
    void measure() throws Exception {
        log("(l) bursts of N = " + SIZES + " iSCSI volumes x 2 paths staged and unstaged at once, " + ROUNDS
                + " rounds, two layouts of targets, over a fabricated node");
        String loadBefore = Files.readString(Path.of("/proc/loadavg")).strip();
        List<String> jfr = new ArrayList<>();
        if (o.profileDir() != null) {
            Files.createDirectories(o.profileDir());
            jfr.add("-XX:StartFlightRecording=filename=" + o.profileDir().resolve("l.jfr") + ",settings=profile");
        }
        List<String> output = onOwnTmpfs("l", "512m", tmpfs -> Volumes.runCommand(o.imageJvm(jfr,
                "dev.blocknode.bench.StageBurstBench", tmpfs.resolve("nodes").toString(),
                String.join(",", SIZES.stream().map(String::valueOf).toList()), Integer.toString(ROUNDS),
                String.join(",", LAYOUTS))));
        String loadAfter = Files.readString(Path.of("/proc/loadavg")).strip();
        Map<String, List<Burst>> byLayout = new LinkedHashMap<>();
        for (String line : output) {
            String[] parts = line.split("\t");
            if (parts.length < 5 || !parts[0].equals("l")) {
                continue;
            }
            Map<String, String> values = new LinkedHashMap<>();
            for (int i = 4; i < parts.length; i++) {
                int eq = parts[i].indexOf('=');
                values.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
            }
            byLayout.computeIfAbsent(parts[1], k -> new ArrayList<>())
                    .add(new Burst(Integer.parseInt(parts[2]), Integer.parseInt(parts[3]), values));
        }
        for (String layout : LAYOUTS) {
            List<Burst> bursts = byLayout.get(layout);
            if (bursts == null || bursts.size() != SIZES.size() * ROUNDS) {
                throw new IOException("StageBurstBench printed " + (bursts == null ? 0 : bursts.size())
                        + " bursts for " + layout + ", not " + SIZES.size() * ROUNDS);
            }
            layout(layout, bursts);
        }
        report.detail("l", "load average before figure l: " + loadBefore + "; after: " + loadAfter);
    }

    private void layout(String layout, List<Burst> bursts) {
        String name = layout.equals("shared") ? "one target with the N LUNs" : "a target per volume";
        Map<Integer, List<Burst>> byN = new TreeMap<>();
        for (Burst b : bursts) {
            byN.computeIfAbsent(b.n(), k -> new ArrayList<>()).add(b);
        }
        int largest = SIZES.get(SIZES.size() - 1);
        int smallest = SIZES.get(0);
        List<Burst> atLargest = byN.get(largest);
        long stageWall = max(atLargest, "stage_wall");
        long drainWall = max(atLargest, "drain_wall");
        long peakKib = max(atLargest, "peak_rss_kib");
        double cpuLargest = medianCpuPerVolume(atLargest);
        double cpuSmallest = medianCpuPerVolume(byN.get(smallest));
        double exponent = exponent(bursts);
        double flat = cpuLargest / cpuSmallest;
        report.row("l", "N = " + largest + " volumes x 2 paths staged at once (" + name + "), the slowest of "
                        + ROUNDS + " rounds, plugin side only", Samples.fmt(stageWall),
                "N = " + smallest + ": " + Samples.fmt(max(byN.get(smallest), "stage_wall")),
                (double) stageWall / max(byN.get(smallest), "stage_wall"), "all staged < 60 s",
                stageWall < GOAL_BURST_S * 1e9, stageWall / (GOAL_BURST_S * 1e9));
        report.row("l", "N = " + largest + " unstaged at once (" + name + "), the slowest round",
                Samples.fmt(drainWall), "N = " + smallest + ": " + Samples.fmt(max(byN.get(smallest), "drain_wall")),
                (double) drainWall / max(byN.get(smallest), "drain_wall"), "all unstaged < 60 s",
                drainWall < GOAL_BURST_S * 1e9, drainWall / (GOAL_BURST_S * 1e9));
        report.row("l", "plugin CPU per volume, stage + unstage (" + name + "), N = " + largest + " vs " + smallest
                        + String.format(Locale.ROOT, ", exponent %.2f (flat = 0)", exponent),
                Samples.fmt(cpuLargest), "N = " + smallest + ": " + Samples.fmt(cpuSmallest), flat,
                "<= 1.5x (flat)", flat <= GOAL_FLAT, flat / GOAL_FLAT);
        report.row("l", "peak RSS (VmHWM) of the JVM over the burst at N = " + largest + " (" + name + ")",
                String.format(Locale.ROOT, "%.1f MiB", peakKib / 1024.0),
                String.format(Locale.ROOT, "N = %d: %.1f MiB", smallest, max(byN.get(smallest), "peak_rss_kib")
                        / 1024.0), (double) peakKib / max(byN.get(smallest), "peak_rss_kib"), "<= 160 MiB",
                peakKib / 1024.0 <= GOAL_PEAK_MIB, peakKib / 1024.0 / GOAL_PEAK_MIB);
        for (Map.Entry<Integer, List<Burst>> entry : byN.entrySet()) {
            report.detail("l", perN(name, entry.getKey(), entry.getValue()));
        }
    }

    /** One N's line: the median of the rounds (the slowest in brackets), per-volume percentiles, CPU, commands. */
    private static String perN(String name, int n, List<Burst> bursts) {
        Samples stage = new Samples();
        Samples drain = new Samples();
        Samples cpu = new Samples();
        Samples fake = new Samples();
        Samples pluginPerVolume = new Samples();
        List<String> stageP = new ArrayList<>();
        List<String> drainP = new ArrayList<>();
        for (Burst b : bursts) {
            stage.add(b.value("stage_wall"));
            drain.add(b.value("drain_wall"));
            cpu.add(b.value("cpu_stage") + b.value("cpu_drain"));
            fake.add(b.value("fake_stage") + b.value("fake_drain"));
            pluginPerVolume.add(Math.round(b.pluginCpuPerVolume()));
            stageP.add(fmtPercentiles(b.percentiles("stage_p")));
            drainP.add(fmtPercentiles(b.percentiles("drain_p")));
        }
        Burst first = bursts.get(0);
        return String.format(Locale.ROOT, "%s, N = %d (%d rounds, rounds in order %s): all staged %s (slowest %s),"
                        + " per volume p50/p90/p99 by round %s; all unstaged %s (slowest %s), per volume %s;"
                        + " process CPU %s (%s a volume), of which the fabricated tools and kernel %s; the plugin's"
                        + " %s a volume; commands a volume %.2f staging + %.2f unstaging; peak RSS %.1f MiB;"
                        + " waits that slept %d",
                name, n, bursts.size(), bursts.stream().map(b -> Integer.toString(b.round())).toList(),
                Samples.fmt(stage.median()), Samples.fmt(stage.max()), stageP, Samples.fmt(drain.median()),
                Samples.fmt(drain.max()), drainP, Samples.fmt(cpu.median()), Samples.fmt(cpu.median() / (double) n),
                Samples.fmt(fake.median()), Samples.fmt(pluginPerVolume.median()),
                first.value("commands_stage") / (double) n, first.value("commands_drain") / (double) n,
                bursts.stream().mapToLong(b -> b.value("peak_rss_kib")).max().orElse(0) / 1024.0,
                bursts.stream().mapToLong(b -> b.value("waits_slept")).sum());
    }

    private static String fmtPercentiles(long[] p) {
        return Samples.fmt(p[0]) + "/" + Samples.fmt(p[1]) + "/" + Samples.fmt(p[2]);
    }

    private static long max(List<Burst> bursts, String key) {
        return bursts.stream().mapToLong(b -> b.value(key)).max().orElseThrow();
    }

    private static double medianCpuPerVolume(List<Burst> bursts) {
        Samples samples = new Samples();
        bursts.forEach(b -> samples.add(Math.round(b.pluginCpuPerVolume())));
        return samples.median();
    }

    /**
     * e in (CPU per volume) ~ N^e, least squares of the logarithms over every burst: 0 is a cost per volume that does
     * not grow with N, 1 a burst whose cost grows with N^2.
     */
    static double exponent(List<Burst> bursts) {
        double sx = 0;
        double sy = 0;
        double sxx = 0;
        double sxy = 0;
        int count = 0;
        for (Burst b : bursts) {
            double perVolume = b.pluginCpuPerVolume();
            if (perVolume <= 0) {
                continue;
            }
            double x = Math.log(b.n());
            double y = Math.log(perVolume);
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
            count++;
        }
        return (count * sxy - sx * sy) / (count * sxx - sx * sx);
    }
}
