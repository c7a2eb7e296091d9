package dev.blocknode.testing;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
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
import java.util.List;
import java.util.Map;

/**
 * A node with N healthy iSCSI volumes staged, as a real stage leaves it, for what the repair loop costs when nothing
 * needs repairing (the cost with 100 healthy volumes) and for the check that such a pass runs no command.
 * Each volume is one LUN reached through two portals, under a two-path multipath map. The iSCSI transport's own
 * {@link IscsiTransport#attach} stages every volume, against a fabricated sysfs ({@link FakeSysfs}: the host's kernel
 * has no SCSI, iSCSI or device-mapper) and a scripted iscsiadm and multipathd that have the real tools' effects, so
 * the node records, the login journal under {@code <state>/iscsi-logins/} and the scan journal under
 * {@code <state>/scsi-scans/} hold what the stage wrote; the staging records are written by the real
 * {@link RecordStore}, as the volume layer leaves them after a stage (STAGED, this boot, the attached device and the
 * transport's details). Nothing of it is mounted: the loop does not look at mounts.
 *
 * <p>Two layouts of targets: {@link Targets#ONE_PER_VOLUME} (a target per volume, as arrays that export each volume
 * as its own target do: 2N sessions) and {@link Targets#SHARED} (one target with N LUNs, as figure h's tgtd: two
 * sessions in all). After {@link #stage}, the scripted runner expects nothing more: any command that runs afterwards
 * fails there and is listed by {@link #commandsSinceStage()}.
 */
public final class StagedIscsiNode {

    /** How the volumes' LUNs are spread over targets. */
    public enum Targets { ONE_PER_VOLUME, SHARED }

    /** A boot id in the kernel's shape: the records are of this boot, so the loop takes every volume. */
    public static final String BOOT_ID = "5f3c2a1e-8b7d-4c6a-9e0f-1a2b3c4d5e6f";
    static final String[] PORTALS = {"10.0.0.1:3260", "10.0.1.1:3260"};

    private final FakeSysfs sysfs;
    private final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    private final ManualClock clock = new ManualClock();
    private final Path database;
    private final Path stateDir;
    private final RecordStore store;
    private final int volumes;
    private int commandsAtStage;

    private StagedIscsiNode(Path root, int volumes) throws IOException {
        this.sysfs = new FakeSysfs(Files.createDirectories(root.resolve("host")));
        this.database = Files.createDirectories(sysfs.paths().etc().resolve("iscsi"));
        this.stateDir = Files.createDirectories(root.resolve("state"));
        this.store = new RecordStore(stateDir, BOOT_ID);
        this.volumes = volumes;
    }

    /** Stages {@code volumes} volumes on a node fabricated under {@code root} (an empty directory). */
    public static StagedIscsiNode stage(Path root, int volumes, Targets targets) throws Exception {
        StagedIscsiNode node = new StagedIscsiNode(root, volumes);
        node.stageAll(targets);
        return node;
    }

    private void stageAll(Targets targets) throws Exception {
        IscsiTransport staging = IscsiTransport.over(
                new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths())),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, clock.waiter(), () -> true,
                LunAttacher.Timeouts.DEFAULTS).journals(LoginJournal.in(stateDir), ScanJournal.in(stateDir)).build();
        for (int v = 0; v < volumes; v++) {
            VolumeLayout layout = VolumeLayout.of(v, targets);
            layout.present(sysfs);
            if (layout.firstOfItsTarget()) {
                ScriptedIscsiadm iscsiadm = new ScriptedIscsiadm(commands, sysfs, database, layout.iqn());
                for (int p = 0; p < 2; p++) {
                    iscsiadm.expectRecordCreated(PORTALS[p]);
                    iscsiadm.expectLogin(PORTALS[p], layout.sessions()[p], layout.hosts()[p]);
                }
            }
            String[] disks = layout.disks();
            String wwid = layout.wwid();
            int minor = v;
            commands.expect("multipath", "-a", wwid);
            commands.expect("multipathd", "add", "path", disks[0]).succeeds("ok\n");
            commands.expect("multipathd", "add", "path", disks[1]).succeeds("ok\n")
                    .andDo(c -> sysfs.addMap(minor, "mpath" + minor, wwid, List.of(disks[0], disks[1])));
            AttachRequest request = layout.request();
            Attachment attached = staging.attach(request);
            store.save(stagedRecord(request, attached));
        }
        commands.assertAllConsumed();
        commandsAtStage = commands.commandLines().size();
    }

    /** The record a stage leaves once the volume's filesystem is mounted at its staging path. */
    static StagingRecord stagedRecord(AttachRequest request, Attachment attached) {
        return StagingRecord.newBuilder()
                .setVolumeId(request.volumeId())
                .setTransport(attached.transport())
                .setStagingPath("/var/lib/kubelet/plugins/kubernetes.io/csi/blocknode.dev/" + request.volumeId()
                        + "/globalmount")
                .setAccessMode("SINGLE_NODE_WRITER")
                .putAllVolumeContext(request.volumeContext())
                .setMount(MountAccessRecord.newBuilder().setFsType("ext4"))
                .setBootId(BOOT_ID)
                .setDevice(DeviceRecord.newBuilder()
                        .setPath(attached.device().toString())
                        .setMajor(attached.number().major())
                        .setMinor(attached.number().minor())
                        .setIdentity(attached.identity()))
                .putAllAttachment(attached.details())
                .setPhase(StagePhase.STAGED)
                .build();
    }

    /**
     * Where volume {@code volume}'s LUN is: its target and LUN number, its WWID (an NAA designator), and per portal the
     * session and SCSI host it is reached through and the disk it shows as. With a target per volume each volume has
     * its own two sessions; with one shared target every volume uses sessions 1 and 2 (SCSI hosts 3 and 4), which
     * the first volume's stage logs in.
     */
    record VolumeLayout(int volume, String iqn, long lun, String naa, int[] sessions, int[] hosts, String[] disks,
                        boolean firstOfItsTarget) {

        static VolumeLayout of(int v, Targets targets) {
            boolean ownTarget = targets == Targets.ONE_PER_VOLUME;
            String iqn = ownTarget ? String.format("iqn.2003-01.org.example.array:vol-%04d", v)
                    : "iqn.2003-01.org.example.array:shared";
            int[] sessions = new int[2];
            int[] hosts = new int[2];
            String[] disks = new String[2];
            for (int p = 0; p < 2; p++) {
                sessions[p] = ownTarget ? 2 * v + p + 1 : p + 1;
                hosts[p] = sessions[p] + 2;
                disks[p] = diskName(2 * v + p);
            }
            return new VolumeLayout(v, iqn, ownTarget ? 1 : v + 1, String.format("6001405%025x", v + 1), sessions,
                    hosts, disks, ownTarget || v == 0);
        }

        String wwid() {
            return "3" + naa;
        }

        /** The array presents the LUN on both paths: a targeted scan of either brings its disk in. */
        void present(FakeSysfs sysfs) {
            for (int p = 0; p < 2; p++) {
                int disk = 2 * volume + p;
                // Majors 65-71 and 128-135 are the sd majors past the first 16 disks, 16 minors a disk.
                sysfs.presentLun(new ScsiAddress(hosts[p], 0, 0, lun), disks[p],
                        new DeviceNumber(65 + disk / 16, (disk % 16) * 16), "naa." + naa, null);
            }
        }

        /** The NodeStageVolume context of the volume: both portals, the target, the LUN. */
        AttachRequest request() {
            return new AttachRequest(volumeId(volume), Map.of("targetPortal", PORTALS[0], "portals", PORTALS[1],
                    "iqn", iqn, "lun", Long.toString(lun)), Map.of(), Secrets.NONE);
        }
    }

    /** sda..sdz, sdaa..sdzz, as the kernel names disks. */
    static String diskName(int index) {
        return index < 26 ? "sd" + (char) ('a' + index)
                : "sd" + (char) ('a' + index / 26 - 1) + (char) ('a' + index % 26);
    }

    public static String volumeId(int index) {
        return String.format("pvc-%04d", index);
    }

    public int volumes() {
        return volumes;
    }

    public FakeSysfs sysfs() {
        return sysfs;
    }

    /** The node's iscsiadm database (node records), where the plugin's image has it: /etc/iscsi. */
    public Path iscsiDatabase() {
        return database;
    }

    public Path stateDir() {
        return stateDir;
    }

    /** The store the records were written with (the loop reads them through it, as the plugin's does). */
    public RecordStore store() {
        return store;
    }

    /** The runner every command of this node goes through: after the stage it expects none. */
    public ScriptedCommandRunner commands() {
        return commands;
    }

    /** The commands run since the stage ended, as "argv joined by spaces". */
    public List<String> commandsSinceStage() {
        List<String> lines = commands.commandLines();
        return List.copyOf(lines.subList(commandsAtStage, lines.size()));
    }

    /** The pauses a wait has made on this node's clock: a healthy pass waits for nothing. */
    public int pauses() {
        return clock.pauses();
    }

    /** A waiter on this node's clock that never sleeps for real. */
    public dev.blocknode.os.wait.DeviceWaiter waiter() {
        return clock.waiter();
    }
}
