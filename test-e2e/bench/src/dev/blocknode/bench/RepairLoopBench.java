package dev.blocknode.bench;

import dev.blocknode.metrics.RepairLoopCost;
import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.LinuxMounter;
import dev.blocknode.repair.PathRepairLoop;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.testing.StagedIscsiNode;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.iscsi.IscsiAdm;
import dev.blocknode.transport.iscsi.IscsiTransport;
import dev.blocknode.transport.iscsi.LoginJournal;
import dev.blocknode.transport.iscsi.NodeRecordFiles;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.ScanJournal;
import dev.blocknode.volume.OperationGuard;
import dev.blocknode.volume.StagedForRepair;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.StringJoiner;

/**
 * Figure k on this host: the repair loop's own cost with healthy volumes (the goal: under 1% of one core with 100).
 * The real {@link PathRepairLoop} and the real iSCSI transport, built as the plugin builds them, over a node whose
 * kernel side is fabricated ({@link StagedIscsiNode}: this host's kernel has no SCSI, iSCSI or device-mapper), with
 * the volumes staged by the transport's own attach and recorded by the real record store. Two such nodes per layout
 * of targets, one with N volumes and one with none (the pass's fixed part), whose passes alternate; each pass is the
 * loop's metered pass, and its cost is read from the loop's own counters
 * ({@code blocknode_path_repair_cpu_seconds_total}, {@code blocknode_path_repair_volume_looks_total}), as /metrics
 * shows them. Any command a pass runs fails the run (a healthy volume needs none).
 *
 * <p>Prints, per layout and node: {@code k-LAYOUT-N <tab> cpu ns per pass,... <tab> wall ns per pass,... <tab>
 * looks per pass,...}; then, per layout, where a pass of the N-volume node goes ({@code k-phases-LAYOUT}).
 * Arguments: work dir, N, warm-up passes, measured passes (per node).
 */
public final class RepairLoopBench {

    private static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(30);

    /** One fabricated node with the loop and transport the plugin would run there. */
    private record Subject(String name, StagedIscsiNode node, PathRepairLoop loop, IscsiTransport transport,
                           StagedForRepair volumes) {
    }

    public static void main(String[] args) throws Exception {
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        Path work = Files.createDirectories(Path.of(args[0]));
        int volumes = Integer.parseInt(args[1]);
        int warmUp = Integer.parseInt(args[2]);
        int measured = Integer.parseInt(args[3]);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Metrics.addRegistry(registry);
        for (StagedIscsiNode.Targets layout : StagedIscsiNode.Targets.values()) {
            String name = layout.name().toLowerCase().replace('_', '-');
            long staging = System.nanoTime();
            Subject full = subject(name + "-" + volumes, StagedIscsiNode.stage(
                    work.resolve(name + "-" + volumes), volumes, layout));
            Subject empty = subject(name + "-0", StagedIscsiNode.stage(work.resolve(name + "-0"), 0, layout));
            System.out.printf("k-staged-%s\t%d volumes in %.1f s%n", name, volumes,
                    (System.nanoTime() - staging) / 1e9);
            for (int i = 0; i < warmUp; i++) {
                pass(full, registry);
                pass(empty, registry);
            }
            StringJoiner[] fullSamples = samples();
            StringJoiner[] emptySamples = samples();
            for (int i = 0; i < measured; i++) {
                // The order alternates, so that neither node always runs right after the other.
                Subject first = i % 2 == 0 ? full : empty;
                Subject second = first == full ? empty : full;
                record(pass(first, registry), first == full ? fullSamples : emptySamples);
                record(pass(second, registry), second == full ? fullSamples : emptySamples);
            }
            for (Subject s : List.of(full, empty)) {
                StringJoiner[] samples = s == full ? fullSamples : emptySamples;
                System.out.println("k-" + s.name() + "\t" + samples[0] + "\t" + samples[1] + "\t" + samples[2]);
                System.out.println("k-commands-" + s.name() + "\t" + s.node().commandsSinceStage().size() + "\t"
                        + String.join("; ", s.node().commandsSinceStage()));
            }
            phases(name, full, measured);
        }
    }

    /** The loop and transport as the plugin's Plugin wires them, on the node's paths, commands and state dir. */
    private static Subject subject(String name, StagedIscsiNode node) {
        HostPaths paths = node.sysfs().paths();
        Host host = new Host(paths, node.commands(), new LinuxMounter(paths), new BlockDevices(paths));
        // The plugin's transport but for the daemon: MultipathDaemon.of asks "multipathd show daemon" once at the
        // plugin's start, in the background; a pass over healthy volumes never asks it.
        IscsiTransport transport = IscsiTransport.over(host, new IscsiAdm(node.commands()),
                new NodeRecordFiles(node.iscsiDatabase()), SysfsWriter.DIRECT, node.waiter(),
                MultipathDaemon.running(true), LunAttacher.Timeouts.DEFAULTS)
                .journals(LoginJournal.in(node.stateDir()), ScanJournal.in(node.stateDir()))
                .repairInterval(DEFAULT_INTERVAL).build();
        StagedForRepair volumes = new StagedForRepair(node.store(), new OperationGuard());
        PathRepairLoop loop = new PathRepairLoop(volumes, new Transports(List.of(transport)), DEFAULT_INTERVAL,
                System::nanoTime);
        return new Subject(name, node, loop, transport, volumes);
    }

    /** One metered pass: {cpu ns, wall ns, looks} from the loop's own counters. */
    private static long[] pass(Subject s, SimpleMeterRegistry registry) {
        double cpu = counter(registry, RepairLoopCost.CPU);
        double looks = counter(registry, RepairLoopCost.LOOKS);
        long started = System.nanoTime();
        try {
            s.loop().meteredPass();
        } catch (AssertionError command) { // the scripted runner's answer to any command
            System.out.println("k-commands-" + s.name() + "\t" + s.node().commandsSinceStage().size() + "\t"
                    + String.join("; ", s.node().commandsSinceStage()));
            throw command;
        }
        long wall = System.nanoTime() - started;
        return new long[]{Math.round((counter(registry, RepairLoopCost.CPU) - cpu) * 1e9), wall,
                Math.round(counter(registry, RepairLoopCost.LOOKS) - looks)};
    }

    private static double counter(SimpleMeterRegistry registry, String name) {
        var counter = registry.find(name).counter();
        return counter == null ? 0 : counter.count();
    }

    private static StringJoiner[] samples() {
        return new StringJoiner[]{new StringJoiner(","), new StringJoiner(","), new StringJoiner(",")};
    }

    private static void record(long[] pass, StringJoiner[] samples) {
        for (int i = 0; i < 3; i++) {
            samples[i].add(Long.toString(pass[i]));
        }
    }

    /**
     * Where a pass of the N-volume node goes (a diagnostic): the same public calls a pass makes, timed apart on this
     * thread's CPU: reading the candidates, the looks ({@code PathRepair.mayRepair} of each), the sweep. The median of
     * each.
     */
    private static void phases(String name, Subject s, int rounds) throws Exception {
        Samples records = new Samples();
        Samples looks = new Samples();
        Samples sweep = new Samples();
        for (int i = 0; i < rounds; i++) {
            long t0 = RepairLoopCost.threadCpuNanos();
            var candidates = s.volumes().candidates();
            long t1 = RepairLoopCost.threadCpuNanos();
            for (var c : candidates) {
                if (s.transport().pathRepair().orElseThrow().mayRepair(c.request(), c.attachment())) {
                    throw new IllegalStateException(c.volumeId() + " looks as if it needed a repair: the fabricated"
                            + " node is not healthy");
                }
            }
            long t2 = RepairLoopCost.threadCpuNanos();
            s.transport().pathRepair().orElseThrow()
                    .sweepOrphans(() -> s.volumes().recordedFor(IscsiTransport.NAME));
            long t3 = RepairLoopCost.threadCpuNanos();
            records.add(t1 - t0);
            looks.add(t2 - t1);
            sweep.add(t3 - t2);
        }
        System.out.println("k-phases-" + name + "\trecords " + Samples.fmt(records.median()) + "\tlooks "
                + Samples.fmt(looks.median()) + "\tsweep " + Samples.fmt(sweep.median()));
    }
}
