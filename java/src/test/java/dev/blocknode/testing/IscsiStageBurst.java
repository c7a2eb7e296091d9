package dev.blocknode.testing;

import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.state.RecordStore;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.iscsi.IscsiAdm;
import dev.blocknode.transport.iscsi.IscsiTransport;
import dev.blocknode.transport.iscsi.LoginJournal;
import dev.blocknode.transport.iscsi.NodeRecordFiles;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.ScanJournal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;

/**
 * N iSCSI volumes staged at once and then unstaged at once (the drain), one thread per volume, as kubelet has one
 * operation per volume in flight: what figure l of the benchmark (test-e2e/bench) measures, on the transport's side
 * of a SAN burst (N = 25 to 200 LUNs x 2 paths). Each volume is one LUN behind two portals under a
 * two-path multipath map; {@link StagedIscsiNode.Targets} spreads the LUNs over one target or a target per volume.
 *
 * <p>The kernel's side is fabricated ({@link FakeSysfs}: the LUNs are presented before the burst, so a targeted scan
 * brings the disk in) and so are the tools: iscsiadm, multipathd and the map's removal, in a
 * {@link ScriptedCommandRunner#inAnyOrder() runner in any order} with the real tools' effects on the tree, each
 * expected once (but a node record's deletion, which the last two volumes of a target may both ask for). The stage
 * is the transport's {@code attach} and the staging record's save by the real {@link RecordStore}; the unstage is
 * its {@code detach} and the record's deletion. Afterwards {@link #leftovers()} says what either left, and
 * {@link #commands()}'s {@code assertAllConsumed} whether a command was missing or unexpected.
 */
public final class IscsiStageBurst {

    /** Per volume, the time from the burst's start to its own end; and the burst's, to the last volume's end. */
    public record Timing(long[] perVolumeNanos, long wallNanos) {
    }

    private final FakeSysfs sysfs;
    private final ScriptedCommandRunner commands = ScriptedCommandRunner.inAnyOrder();
    private final Path database;
    private final Path stateDir;
    private final RecordStore store;
    private final List<AttachRequest> requests = new ArrayList<>();
    private final Map<String, Attachment> attached = new ConcurrentHashMap<>();

    private IscsiStageBurst(Path root) throws IOException {
        this.sysfs = new FakeSysfs(Files.createDirectories(root.resolve("host")));
        this.database = Files.createDirectories(sysfs.paths().etc().resolve("iscsi"));
        this.stateDir = Files.createDirectories(root.resolve("state"));
        this.store = new RecordStore(stateDir, StagedIscsiNode.BOOT_ID);
    }

    /** A node under {@code root} (an empty directory) with {@code volumes} LUNs presented and the burst's commands. */
    public static IscsiStageBurst fabricate(Path root, int volumes, StagedIscsiNode.Targets targets)
            throws IOException {
        IscsiStageBurst burst = new IscsiStageBurst(root);
        for (int v = 0; v < volumes; v++) {
            burst.present(v, targets);
        }
        return burst;
    }

    private void present(int v, StagedIscsiNode.Targets targets) {
        StagedIscsiNode.VolumeLayout layout = StagedIscsiNode.VolumeLayout.of(v, targets);
        layout.present(sysfs);
        if (layout.firstOfItsTarget()) {
            ScriptedIscsiadm iscsiadm = new ScriptedIscsiadm(commands, sysfs, database, layout.iqn());
            for (int p = 0; p < 2; p++) {
                String portal = StagedIscsiNode.PORTALS[p];
                iscsiadm.expectRecordCreated(portal);
                iscsiadm.expectLogin(portal, layout.sessions()[p], layout.hosts()[p]);
                iscsiadm.expectLogoutInAnyOrder(portal, layout.sessions()[p], layout.hosts()[p]);
            }
        }
        String[] disks = layout.disks();
        String wwid = layout.wwid();
        String map = "mpath" + v;
        // multipathd with find_multipaths "no" (figure h's guest): it records the WWID itself, no multipath -a.
        commands.expect("multipathd", "add", "path", disks[0]).succeeds("ok\n");
        commands.expect("multipathd", "add", "path", disks[1]).succeeds("ok\n")
                .andDo(c -> sysfs.addMap(v, map, wwid, List.of(disks[0], disks[1])));
        // The map's removal as the transport makes it without a device-mapper control node (the fabricated /dev has
        // none): a node's plugin makes it with two ioctls instead.
        commands.expect("dmsetup", "message", map, "0", "fail_if_no_path");
        commands.expect("multipath", "-f", map).andDo(c -> sysfs.removeMap("dm-" + v));
        requests.add(layout.request());
    }

    /**
     * The transport as {@code Plugin} builds it, on this node's paths and state dir, but for what stands in for the
     * kernel and the tools: {@code commands} and {@code writer} (this node's {@link #commands()} and
     * {@link #sysfs()}, or something that wraps them), the waiter given, and a multipathd that runs and takes every
     * path (the plugin asks the daemon once at start, in the background; here the answer is fixed, so that every run
     * of the burst runs the same commands).
     */
    public IscsiTransport transport(CommandRunner commands, SysfsWriter writer, DeviceWaiter waiter) {
        Host host = new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths()));
        return IscsiTransport.over(host, new IscsiAdm(commands), new NodeRecordFiles(database), writer, waiter,
                new GreedyMultipathd(), LunAttacher.Timeouts.DEFAULTS)
                .journals(LoginJournal.in(stateDir), ScanJournal.in(stateDir)).build();
    }

    /** Every volume staged at once: attached, then its staging record saved. Fails if any volume failed. */
    public Timing stageAll(IscsiTransport transport) throws Exception {
        return atOnce(request -> {
            Attachment attachment = transport.attach(request);
            store.save(StagedIscsiNode.stagedRecord(request, attachment));
            attached.put(request.volumeId(), attachment);
        });
    }

    /** Every volume unstaged at once: detached, then its staging record deleted. Fails if any volume failed. */
    public Timing unstageAll(IscsiTransport transport) throws Exception {
        return atOnce(request -> {
            Attachment attachment = attached.get(request.volumeId());
            if (attachment == null) {
                throw new IllegalStateException("volume " + request.volumeId() + " was not staged");
            }
            transport.detach(attachment);
            store.delete(request.volumeId());
            attached.remove(request.volumeId());
        });
    }

    @FunctionalInterface
    private interface VolumeOperation {
        void run(AttachRequest request) throws Exception;
    }

    /** A thread per volume, all let go at once; each one's time runs from that moment to its own end. */
    private Timing atOnce(VolumeOperation operation) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        long[] ends = new long[requests.size()];
        List<Throwable> failures = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            int index = i;
            AttachRequest request = requests.get(i);
            threads.add(Thread.ofPlatform().name("volume-" + request.volumeId()).start(() -> {
                try {
                    go.await();
                    operation.run(request);
                    ends[index] = System.nanoTime();
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(new AssertionError("volume " + request.volumeId() + ": " + e, e));
                    }
                }
            }));
        }
        long start = System.nanoTime();
        go.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
        long last = System.nanoTime();
        synchronized (failures) {
            if (!failures.isEmpty()) {
                AssertionError failed = new AssertionError(failures.size() + " of " + requests.size()
                        + " volumes failed; the first: " + failures.get(0).getMessage(), failures.get(0));
                failures.stream().skip(1).limit(5).forEach(failed::addSuppressed);
                throw failed;
            }
        }
        long[] perVolume = new long[ends.length];
        long wall = 0;
        for (int i = 0; i < ends.length; i++) {
            perVolume[i] = ends[i] - start;
            wall = Math.max(wall, perVolume[i]);
        }
        return new Timing(perVolume, requests.isEmpty() ? last - start : wall);
    }

    /**
     * What the burst left on the node, as "kind: name" (empty: nothing): iSCSI sessions, SCSI disks, dm maps,
     * iscsiadm node records, login and scan journal entries, staging records (in the store and on disk).
     */
    public List<String> leftovers() throws IOException {
        List<String> left = new ArrayList<>();
        listed(left, "session", sysfs.sys().resolve("class/iscsi_session"));
        sysfs.diskNames().forEach(d -> left.add("disk: " + d));
        try (Stream<Path> blocks = Files.list(sysfs.sys().resolve("class/block"))) {
            blocks.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("dm-")).sorted()
                    .forEach(n -> left.add("map: " + n));
        }
        Path nodes = database.resolve("nodes");
        if (Files.isDirectory(nodes)) {
            try (Stream<Path> records = Files.walk(nodes)) {
                records.filter(Files::isRegularFile).forEach(r -> left.add("node record: " + nodes.relativize(r)));
            }
        }
        listed(left, "login journal entry", stateDir.resolve(LoginJournal.DIRECTORY));
        listed(left, "scan journal entry", stateDir.resolve(ScanJournal.DIRECTORY));
        store.all().forEach(r -> left.add("staging record: " + r.getVolumeId()));
        try (Stream<Path> files = Files.list(store.directory())) {
            files.filter(Files::isRegularFile).filter(f -> !f.getFileName().toString().startsWith("."))
                    .forEach(f -> left.add("state file: " + f.getFileName()));
        }
        return left;
    }

    private static void listed(List<String> into, String kind, Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            try (Stream<Path> entries = Files.list(dir)) {
                entries.map(p -> kind + ": " + p.getFileName()).sorted().forEach(into::add);
            }
        }
    }

    public int volumes() {
        return requests.size();
    }

    public FakeSysfs sysfs() {
        return sysfs;
    }

    /** The tools' side: every command the burst may run, each expected once, in any order. */
    public ScriptedCommandRunner commands() {
        return commands;
    }

    public Path stateDir() {
        return stateDir;
    }
}
