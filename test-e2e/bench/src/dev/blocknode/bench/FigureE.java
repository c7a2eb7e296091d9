package dev.blocknode.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.blocknode.bench.BenchRun.log;

/** (e) start to the first Probe and the resident memory, the image's JVM flags against the defaults. */
final class FigureE extends Figure {

    /** When the idle RSS is read a second time: after C1's start-up work and a native-heap trim or two. */
    private static final long SETTLED_MILLIS = 15_000;
    /** The goals: start to the first Probe, settled idle RSS, peak RSS in the burst. */
    private static final long START_LIMIT_NANOS = 250_000_000L;
    private static final long SETTLED_LIMIT_MIB = 56;
    private static final long BURST_LIMIT_MIB = 90;

    FigureE(BenchRun run) {
        super(run);
    }

    void measure(List<String> image, FigureC.Burst imageBurst, FigureC.Burst defaultBurst) throws Exception {
        log("(e) start to Probe-ready and RSS, image flags vs default flags (" + o.startTrials() + " starts each)");
        Map<String, List<String>> configs = new LinkedHashMap<>();
        configs.put("image", image);
        configs.put("default", List.of());
        if (o.aotCache() != null) {
            configs.put("jvm.args, no AOT cache", List.of("@" + o.jvmArgs()));
        }
        Map<String, Samples> start = new LinkedHashMap<>();
        Map<String, Samples> idle = new LinkedHashMap<>();
        Map<String, Samples> anon = new LinkedHashMap<>();
        Map<String, String> maps = new LinkedHashMap<>();
        Map<String, Samples> toCheck = new LinkedHashMap<>();
        Map<String, Samples> toListen = new LinkedHashMap<>();
        Map<String, Samples> toAccept = new LinkedHashMap<>();
        Map<String, Samples> fresh = new LinkedHashMap<>();
        Map<String, Long> settled = new LinkedHashMap<>();
        configs.keySet().forEach(k -> {
            toAccept.put(k, new Samples());
            fresh.put(k, new Samples());
            toCheck.put(k, new Samples());
            toListen.put(k, new Samples());
            start.put(k, new Samples());
            idle.put(k, new Samples());
            anon.put(k, new Samples());
        });
        List<String> names = new ArrayList<>(configs.keySet());
        Volumes.runCommand(List.of("sync"));
        for (int t = 0; t < o.startTrials(); t++) {
            for (int i = 0; i < names.size(); i++) {
                String name = names.get((i + t) % names.size()); // rotate the order: no config always goes first
                String dirName = "e-" + name.replaceAll("[^a-z]", "") + "-" + t;
                try (PluginProcess p = PluginProcess.start(dirName, configs.get(name), o.work().resolve(dirName),
                        null, o)) {
                    run.plugins.add(p);
                    start.get(name).add(p.awaitProbeReady(run.eventLoops, Duration.ofSeconds(60)));
                    toAccept.get(name).add(p.acceptingNanos);
                    fresh.get(name).add(p.freshChannelProbe(run.eventLoops));
                    Thread.sleep(o.idleSettleMillis());
                    idle.get(name).add(p.statusKib("VmRSS"));
                    anon.get(name).add(p.statusKib("RssAnon"));
                    maps.putIfAbsent(name, rssByMapping(p.process.pid()));
                    if (t == 0) {
                        // Idle as a daemon is: its start-up compilations done and their memory given back.
                        Thread.sleep(SETTLED_MILLIS - o.idleSettleMillis());
                        settled.put(name, p.statusKib("VmRSS"));
                    }
                    toCheck.get(name).add(p.loggedAfterStart("startup check") * 1_000_000);
                    toListen.get(name).add(p.loggedAfterStart("listening on unix://") * 1_000_000);
                }
            }
        }
        Samples imageStart = start.get("image");
        Samples defaultStart = start.get("default");
        report.row("e", "exec to first successful Probe, median of " + o.startTrials(), Samples.fmt(imageStart.median()),
                "default flags " + Samples.fmt(defaultStart.median()),
                (double) imageStart.median() / defaultStart.median(), "<= 250 ms",
                imageStart.median() <= START_LIMIT_NANOS, imageStart.median() / (double) START_LIMIT_NANOS);
        long imageIdle = idle.get("image").median();
        long defaultIdle = idle.get("default").median();
        report.row("e", "idle RSS (VmRSS " + o.idleSettleMillis() / 1000.0 + " s after Probe-ready), median",
                Samples.mib(imageIdle), "default flags " + Samples.mib(defaultIdle),
                (double) imageIdle / defaultIdle, "-", null, 0);
        long imageSettled = settled.get("image");
        report.row("e", "idle RSS settled (VmRSS " + SETTLED_MILLIS / 1000 + " s after Probe-ready, first start)",
                Samples.mib(imageSettled), "default flags " + Samples.mib(settled.get("default")),
                (double) imageSettled / settled.get("default"), "<= " + SETTLED_LIMIT_MIB + " MiB",
                imageSettled <= SETTLED_LIMIT_MIB * 1024, imageSettled / (SETTLED_LIMIT_MIB * 1024.0));
        if (imageBurst != null && defaultBurst != null) {
            report.row("e", "peak RSS during the " + o.burst() + "-volume burst (VmHWM, reset before it)",
                    Samples.mib(imageBurst.hwmKib()), "default flags " + Samples.mib(defaultBurst.hwmKib()),
                    (double) imageBurst.hwmKib() / defaultBurst.hwmKib(), "<= " + BURST_LIMIT_MIB + " MiB",
                    imageBurst.hwmKib() <= BURST_LIMIT_MIB * 1024, imageBurst.hwmKib() / (BURST_LIMIT_MIB * 1024.0));
        }
        for (String name : names) {
            report.detail("e", name + ": start " + start.get(name).summary() + "; idle VmRSS median "
                    + Samples.mib(idle.get(name).median()) + " (min " + Samples.mib(idle.get(name).min()) + ", max "
                    + Samples.mib(idle.get(name).max()) + "), of which RssAnon median "
                    + Samples.mib(anon.get(name).median()));
        }
        for (FigureC.Burst b : java.util.Arrays.asList(imageBurst, defaultBurst)) {
            if (b != null) {
                report.detail("e", "burst on " + b.flags() + ": VmRSS before " + Samples.mib(b.rssBeforeKib())
                        + ", VmHWM during " + Samples.mib(b.hwmKib()) + ", VmRSS after " + Samples.mib(b.rssAfterKib())
                        + "; wall " + Samples.fmt(b.wall()) + " vs one volume " + Samples.fmt(b.one()) + " x "
                        + o.burst() + " / " + run.cores + " = "
                        + Samples.ratio(b.wall() / ((double) b.one() * o.burst() / run.cores)));
            }
        }
        report.detail("e", "image = java " + String.join(" ", image) + " -jar blocknode.jar ...; default = java -jar "
                + "blocknode.jar ... (JVM ergonomics: G1, heap 1/4 of RAM); jvm.args = " + String.join(" ",
                Files.readAllLines(o.jvmArgs()).stream().map(String::strip).filter(l -> !l.isEmpty()).toList()));
        for (String name : names) {
            report.diag("start phases of " + name + " (medians; from the plugin's JSON log times, ms resolution):"
                    + " exec to the startup-check line (JVM boot, native library, wiring) "
                    + Samples.fmt(toCheck.get(name).median()) + ", to \"listening\" (metrics registry and HTTP server,"
                    + " Netty epoll, gRPC server) " + Samples.fmt(toListen.get(name).median())
                    + "; from the bench's clock: exec to the socket accepting " + Samples.fmt(toAccept.get(name).median())
                    + ", to the first Probe answered " + Samples.fmt(start.get(name).median())
                    + "; a second Probe right after on a fresh channel (the client's connect and HTTP/2 handshake"
                    + " against a server past its first call) " + Samples.fmt(fresh.get(name).median()));
        }
        maps.forEach((name, text) -> report.diag("idle RSS by mapping (/proc/PID/smaps, first start), " + name + ": "
                + text));
        footprint(image);
    }

    /**
     * What each MiB of the settled plugin is, on the image's flags: a start of its own with Native Memory
     * Tracking (its bookkeeping, ~0.4 MiB, is in the total), read {@link #SETTLED_MILLIS} after Probe-ready.
     */
    private void footprint(List<String> image) throws Exception {
        List<String> flags = new ArrayList<>(image);
        flags.add("-XX:NativeMemoryTracking=summary");
        try (PluginProcess p = PluginProcess.start("e-nmt", flags, o.work().resolve("e-nmt"), null, o)) {
            run.plugins.add(p);
            p.awaitProbeReady(run.eventLoops, Duration.ofSeconds(60));
            Thread.sleep(SETTLED_MILLIS);
            report.diag("settled RSS of the image's flags, what each MiB is (smaps by owner; a start of its own with"
                    + " -XX:NativeMemoryTracking=summary, " + SETTLED_MILLIS / 1000 + " s after Probe-ready): "
                    + Footprint.describe(p.process.pid()));
        }
    }

    /** The largest contributors to RSS by mapping (file name or [anon]), with their anonymous (dirtied) part. */
    private static String rssByMapping(long pid) throws IOException {
        Map<String, long[]> byName = new LinkedHashMap<>();
        String current = "[anon]";
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps"))) {
            String[] f = line.split("\\s+");
            if (f.length >= 5 && f[0].matches("[0-9a-f]+-[0-9a-f]+")) {
                current = f.length >= 6 ? f[5] : "[anon]";
                if (current.startsWith("/")) {
                    current = Path.of(current).getFileName().toString();
                }
            } else if (line.startsWith("Rss:")) {
                byName.computeIfAbsent(current, k -> new long[2])[0] += Long.parseLong(f[1]);
            } else if (line.startsWith("Anonymous:")) {
                byName.computeIfAbsent(current, k -> new long[2])[1] += Long.parseLong(f[1]);
            }
        }
        List<Map.Entry<String, long[]>> sorted = new ArrayList<>(byName.entrySet());
        sorted.sort((x, y) -> Long.compare(y.getValue()[0], x.getValue()[0]));
        StringBuilder out = new StringBuilder();
        long rest = 0;
        for (int i = 0; i < sorted.size(); i++) {
            long[] v = sorted.get(i).getValue();
            if (i < 4) {
                out.append(sorted.get(i).getKey()).append(' ').append(Samples.mib(v[0])).append(" (anon ")
                        .append(Samples.mib(v[1])).append("), ");
            } else {
                rest += v[0];
            }
        }
        return out.append("the rest ").append(Samples.mib(rest)).toString();
    }
}
