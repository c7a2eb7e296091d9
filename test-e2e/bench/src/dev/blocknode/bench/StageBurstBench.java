package dev.blocknode.bench;

import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.IscsiStageBurst;
import dev.blocknode.testing.StagedIscsiNode;
import dev.blocknode.transport.iscsi.IscsiTransport;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Figure l on this host: the plugin's own side of a SAN burst (N LUNs x 2 paths staged at once, then
 * unstaged at once). {@link IscsiStageBurst} over a fabricated node: the real iSCSI transport, record store and
 * journals, one thread per volume; the kernel and the tools fabricated, their own CPU counted apart (each command
 * and each sysfs write with its reaction, on the calling thread's clock). Run in a JVM with the image's flags.
 *
 * <p>After one unreported burst of warm-up per layout, rounds of every N, in an order that changes round by round
 * (so that drift in the machine's load shows as spread across rounds, not as a trend in N). Prints, per burst:
 * {@code l <tab> layout <tab> N <tab> round <tab> key=value...} (times in ns, peak RSS in KiB), and fails if a
 * burst left anything or ran a command it should not have. Arguments: work dir, the N's (comma-separated), rounds,
 * layouts (comma-separated: shared, one-per-volume).
 */
public final class StageBurstBench {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final int WARM_UP_VOLUMES = 25;

    /** The fabricated side's CPU (tools and kernel reactions) in a burst, and the waits that slept. */
    private static final class FakeCost {
        final LongAdder cpuNanos = new LongAdder();
        final AtomicInteger pauses = new AtomicInteger();
    }

    public static void main(String[] args) throws Exception {
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        Path work = Files.createDirectories(Path.of(args[0]));
        List<Integer> sizes = new ArrayList<>();
        for (String n : args[1].split(",")) {
            sizes.add(Integer.parseInt(n));
        }
        int rounds = Integer.parseInt(args[2]);
        List<StagedIscsiNode.Targets> layouts = new ArrayList<>();
        for (String layout : args[3].split(",")) {
            layouts.add(StagedIscsiNode.Targets.valueOf(layout.toUpperCase(Locale.ROOT).replace('-', '_')));
        }
        // As the plugin has one: the phases and path repairs it times go somewhere.
        Metrics.addRegistry(new SimpleMeterRegistry());
        int burstNumber = 0;
        for (StagedIscsiNode.Targets layout : layouts) {
            burst(work.resolve("warm-up-" + burstNumber++), WARM_UP_VOLUMES, layout);
        }
        for (int round = 0; round < rounds; round++) {
            for (int n : orderOfRound(sizes, round)) {
                for (StagedIscsiNode.Targets layout : layouts) {
                    String measured = burst(work.resolve("burst-" + burstNumber++), n, layout);
                    System.out.println("l\t" + name(layout) + "\t" + n + "\t" + round + "\t" + measured);
                }
            }
        }
    }

    /** Round 0 ascending, 1 descending, then rotations of those: each N early in one round and late in another. */
    static List<Integer> orderOfRound(List<Integer> sizes, int round) {
        List<Integer> order = new ArrayList<>(sizes);
        if (round % 2 == 1) {
            java.util.Collections.reverse(order);
        }
        java.util.Collections.rotate(order, round / 2);
        return order;
    }

    private static String name(StagedIscsiNode.Targets layout) {
        return layout.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** One burst of N stages and then N unstages on a fresh node; what it cost, as key=value pairs. */
    private static String burst(Path root, int volumes, StagedIscsiNode.Targets layout) throws Exception {
        IscsiStageBurst burst = IscsiStageBurst.fabricate(root, volumes, layout);
        FakeCost fake = new FakeCost();
        IscsiTransport transport = burst.transport(metered(burst.commands(), fake), metered(burst.sysfs(), fake),
                new DeviceWaiter(InstantSource.system(), atMost -> {
                    fake.pauses.incrementAndGet();
                    Thread.sleep(atMost);
                }, DeviceWaiter.DEFAULT_INTERVAL));
        System.gc(); // each burst starts from a heap without the last one's garbage
        resetPeakRss();
        long cpu0 = processCpuNanos();
        IscsiStageBurst.Timing stage = burst.stageAll(transport);
        long cpu1 = processCpuNanos();
        long fakeStage = fake.cpuNanos.sum();
        int commandsStaged = burst.commands().commandLines().size();
        IscsiStageBurst.Timing drain = burst.unstageAll(transport);
        long cpu2 = processCpuNanos();
        long peakKib = peakRssKib();
        List<String> left = burst.leftovers();
        if (!left.isEmpty()) {
            throw new IllegalStateException("figure l: the burst of " + volumes + " (" + name(layout) + ") left "
                    + left.size() + " things: " + left.subList(0, Math.min(10, left.size())));
        }
        burst.commands().assertAllConsumed();
        int commands = burst.commands().commandLines().size();
        FakeSysfs.deleteTree(root);
        return String.join("\t",
                "stage_wall=" + stage.wallNanos(), "stage_p=" + percentiles(stage.perVolumeNanos()),
                "drain_wall=" + drain.wallNanos(), "drain_p=" + percentiles(drain.perVolumeNanos()),
                "cpu_stage=" + (cpu1 - cpu0), "cpu_drain=" + (cpu2 - cpu1),
                "fake_stage=" + fakeStage, "fake_drain=" + (fake.cpuNanos.sum() - fakeStage),
                "commands_stage=" + commandsStaged, "commands_drain=" + (commands - commandsStaged),
                "peak_rss_kib=" + peakKib, "waits_slept=" + fake.pauses.get());
    }

    private static String percentiles(long[] nanos) {
        Samples samples = new Samples();
        for (long ns : nanos) {
            samples.add(ns);
        }
        return samples.median() + "," + samples.p90() + "," + samples.p99();
    }

    /** The tools' side, its CPU counted apart: what a command costs on a node is another process's. */
    private static CommandRunner metered(CommandRunner commands, FakeCost fake) {
        return command -> {
            long start = THREADS.getCurrentThreadCpuTime();
            try {
                return commands.run(command);
            } finally {
                fake.cpuNanos.add(THREADS.getCurrentThreadCpuTime() - start);
            }
        };
    }

    /**
     * The kernel's side of a sysfs write, its CPU counted apart. The write itself is the plugin's on a node too, but
     * here it also builds or tears down the fabricated disks, which is the kernel's work; both go to the fake.
     */
    private static SysfsWriter metered(SysfsWriter writer, FakeCost fake) {
        return (attribute, value) -> {
            long start = THREADS.getCurrentThreadCpuTime();
            try {
                writer.write(attribute, value);
            } finally {
                fake.cpuNanos.add(THREADS.getCurrentThreadCpuTime() - start);
            }
        };
    }

    /** user + system CPU of this process (all threads: the JIT's and the collector's too). */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** Starts VmHWM over from the current RSS (clear_refs 5, Linux 4.0 and later). */
    private static void resetPeakRss() throws IOException {
        Files.writeString(Path.of("/proc/self/clear_refs"), "5");
    }

    private static long peakRssKib() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IOException("no VmHWM in /proc/self/status");
    }
}
