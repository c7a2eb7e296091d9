package dev.blocknode.client;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.BlockAccessRecord;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.TerminalText;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code blocknode status} over a fabricated node: a state directory written by the real {@link RecordStore}, a
 * mount table and sysfs ({@link FakeSysfs}); the model, both renderers, the exit codes, and that nothing on disk
 * changes.
 */
class StatusCommandUnitTest {

    private static final String BOOT = "0b5e3c1a-6f2d-4a7e-9c11-2d3e4f5a6b7c";
    private static final String POD = "5d1c7e0a-1111-2222-3333-444455556666";

    @TempDir
    Path dir;
    private FakeSysfs sysfs;
    private Path stateDir;
    private Path kubelet;
    private Path staging;
    private Path target;

    @BeforeEach
    void node() throws IOException {
        sysfs = new FakeSysfs(Files.createDirectories(dir.resolve("host")));
        Path bootId = sysfs.paths().bootId();
        Files.createDirectories(bootId.getParent());
        Files.writeString(bootId, BOOT + "\n");
        Files.createDirectories(sysfs.paths().mountInfo().getParent());
        stateDir = dir.resolve("state");
        kubelet = dir.resolve("kubelet");
        staging = kubelet.resolve("plugins/kubernetes.io/csi/block.csi.blocknode.dev/abc/globalmount");
        target = kubelet.resolve("pods/" + POD + "/volumes/kubernetes.io~csi/pv-db1/mount");
    }

    private void stageDb1() throws IOException {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(StagingRecord.newBuilder().setVolumeId("db1").setPhase(StagePhase.STAGED).setTransport("local")
                .setStagingPath(staging.toString())
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/loop3").setMajor(7).setMinor(3)
                        .setIdentity("loop:/var/lib/db1.img"))
                .setMount(MountAccessRecord.newBuilder().setFsType("ext4"))
                .setFenceKey(0x1234L)
                .build());
        store.savePublications("db1", Map.of(target.toString(), PublicationRecord.newBuilder().setReadonly(false).build()));
        sysfs.addBlockDevice("loop3", new DeviceNumber(7, 3));
    }

    private void mounts(String... mountPoints) throws IOException {
        StringBuilder table = new StringBuilder("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n");
        int id = 100;
        for (String point : mountPoints) {
            table.append(id++).append(" 22 7:3 / ").append(point).append(" rw,relatime shared:9 - ext4 /dev/loop3 rw\n");
        }
        Files.writeString(sysfs.paths().mountInfo(), table.toString());
    }

    private record Run(int code, String out, String err) {
    }

    private Run status(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> all = new ArrayList<>(List.of("--state-dir", stateDir.toString(), "--kubelet-root",
                kubelet.toString()));
        all.addAll(List.of(args));
        int code = StatusCommand.run(all, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), sysfs.paths());
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aHealthyVolumeIsShownWholeAndExitsZero() throws IOException {
        stageDb1();
        mounts(staging.toString(), target.toString());

        Run text = status();
        assertEquals(0, text.code(), text.out() + text.err());
        assertTrue(text.out().startsWith("no problems: 1 volume(s), all healthy\n"), text.out());
        assertTrue(text.out().contains("db1     STAGED  local      mount   /dev/loop3 (7:3)  yes"), text.out());
        assertTrue(text.out().contains("0x0000000000001234"), text.out());
        assertTrue(text.out().contains("db1     " + POD + "  rw    yes      " + target), text.out());
        assertTrue(text.out().contains("DEVICE IDENTITIES\nVOLUME  IDENTITY\ndb1     loop:/var/lib/db1.img\n"), text.out());

        Run json = status("-o", "json");
        assertEquals(0, json.code());
        assertTrue(json.out().matches("(?s).*\"updatedAt\":\"\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z\"}].*"), json.out());
        assertEquals("{\"schemaVersion\":1,\"healthy\":true,\"volumes\":[{\"volumeId\":\"db1\",\"phase\":\"STAGED\","
                + "\"transport\":\"local\",\"accessType\":\"mount\",\"device\":{\"path\":\"/dev/loop3\","
                + "\"majorMinor\":\"7:3\",\"identity\":\"loop:/var/lib/db1.img\",\"present\":true},"
                + "\"stagingPath\":\"" + staging + "\",\"stagingMounted\":true,\"paths\":null,\"publications\":[{\"target\":\""
                + target + "\",\"readOnly\":false,\"podUid\":\"" + POD + "\",\"mounted\":true}],"
                + "\"fenceKey\":\"0x0000000000001234\",\"problems\":[],\"updatedAt\":\"T\"}],\"unreadableRecords\":[],"
                + "\"unrecordedMounts\":[],\"sweepKept\":null}\n",
                json.out().replaceFirst("\"updatedAt\":\"[^\"]+\"", "\"updatedAt\":\"T\""));
    }

    /**
     * A multipath volume is read by its transport as NodeGetVolumeHealth reads it: its paths' count in the row and
     * the JSON, a lost path as a PathsFailed problem naming the path, and no command run (the transports status
     * builds refuse to run one).
     */
    @Test
    void aSanVolumesPathsAreShownAndALostPathIsAProblem() throws IOException {
        String wwid = "36001405f3d2a1b0c4e5f60718293a4b5";
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 1), "sdb", new DeviceNumber(8, 16), "naa." + wwid.substring(1));
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 1), "sdc", new DeviceNumber(8, 32), "naa." + wwid.substring(1));
        sysfs.addMap(3, "mpatha", wwid, List.of("sdb", "sdc"));
        Path blockStaging = kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/staging/pv-logs");
        new RecordStore(stateDir, BOOT).save(StagingRecord.newBuilder().setVolumeId("logs").setPhase(StagePhase.STAGED)
                .setTransport("iscsi").setStagingPath(blockStaging.toString())
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/dm-3").setMajor(253).setMinor(3)
                        .setIdentity("naa." + wwid.substring(1)))
                .setBlock(BlockAccessRecord.getDefaultInstance())
                .putAttachment("wwid", wwid).putAttachment("multipathMap", "mpatha")
                .putAttachment("paths", "3:0:0:1=sdb,4:0:0:1=sdc")
                .build());
        mounts();

        Run healthy = status();
        assertEquals(0, healthy.code(), healthy.out() + healthy.err());
        assertTrue(healthy.out().contains("MOUNTED  PATHS  FENCE KEY"), healthy.out());
        assertTrue(healthy.out().contains(" -        2/2    -  "), healthy.out());
        assertTrue(status("-o", "json").out().contains("\"paths\":{\"serving\":2,\"total\":2,\"failures\":[]}"));

        sysfs.setState("sdc", "transport-offline");
        Run degraded = status();
        assertEquals(1, degraded.code(), degraded.out());
        assertTrue(degraded.out().startsWith("PROBLEMS\nVOLUME  PROBLEM      DETAIL\n"
                + "logs    PathsFailed  multipath map mpatha serves on 1 path(s); sdc is transport-offline\n"),
                degraded.out());
        assertTrue(degraded.out().contains(" -        1/2    -  "), degraded.out());
        Run json = status("-o", "json");
        assertTrue(json.out().contains("\"paths\":{\"serving\":1,\"total\":2,\"failures\":[\"sdc is transport-offline\"]}"),
                json.out());
        assertTrue(json.out().contains("{\"reason\":\"PathsFailed\",\"severity\":\"DEGRADED\","), json.out());

        sysfs.setState("sdb", "offline");
        Run down = status("-o", "json");
        assertTrue(down.out().contains("{\"reason\":\"NoPathServing\",\"severity\":\"INACCESSIBLE\","), down.out());
    }

    /**
     * What no record explains: a mount in the driver's staging directory of a device no record names (a lost
     * record), and the recorded volume's device mounted once more outside its staging path and publications (a
     * leftover publication). Both are problems; the recorded mounts are not; another driver's staging mount is
     * none of ours.
     */
    @Test
    void mountsThatNoRecordExplainsAreProblems() throws IOException {
        stageDb1();
        Path lost = kubelet.resolve("plugins/kubernetes.io/csi/block.csi.blocknode.dev/def/globalmount");
        Path foreign = kubelet.resolve("plugins/kubernetes.io/csi/other.csi.example.com/abc/globalmount");
        Path extra = dir.resolve("mnt/extra");
        Files.writeString(sysfs.paths().mountInfo(), "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                + "100 22 7:3 / " + staging + " rw,relatime shared:9 - ext4 /dev/loop3 rw\n"
                + "101 22 7:3 / " + target + " rw,relatime shared:9 - ext4 /dev/loop3 rw\n"
                + "102 22 7:3 / " + extra + " rw,relatime shared:9 - ext4 /dev/loop3 rw\n"
                + "103 22 8:48 / " + lost + " rw,relatime shared:10 - xfs /dev/sdd rw\n"
                + "104 22 8:64 / " + foreign + " rw,relatime shared:11 - ext4 /dev/sde rw\n");

        Run text = status();
        assertEquals(1, text.code(), text.out());
        assertTrue(text.out().startsWith("PROBLEMS\n"), text.out());
        assertTrue(text.out().contains("db1     UnrecordedMount  volume db1's device 7:3 is also mounted at " + extra
                + ", which no record names\n"), text.out());
        assertTrue(text.out().contains("-       UnrecordedMount  device 8:48 (xfs) is mounted at " + lost
                + " in the driver's staging directory, but no record names it\n"), text.out());
        assertFalse(text.out().contains(foreign.toString()), text.out());

        Run json = status("-o", "json");
        assertEquals(1, json.code());
        assertTrue(json.out().contains("\"healthy\":false"), json.out());
        assertTrue(json.out().contains("\"unrecordedMounts\":[{\"mountPoint\":\"" + lost + "\",\"majorMinor\":\"8:48\","
                + "\"fsType\":\"xfs\",\"volumeId\":null,"), json.out());
        assertTrue(json.out().contains("{\"mountPoint\":\"" + extra + "\",\"majorMinor\":\"7:3\",\"fsType\":\"ext4\","
                + "\"volumeId\":\"db1\","), json.out());
    }

    @Test
    void aMissingStagingMountAndPublicationAreProblemsListedFirst() throws IOException {
        stageDb1();
        mounts();

        Run text = status();
        assertEquals(1, text.code());
        String detail = " ".repeat("db1     StagingMountMissing  ".length());
        assertTrue(text.out().startsWith("PROBLEMS\nVOLUME  PROBLEM              DETAIL\n"
                + "db1     StagingMountMissing  volume db1 is not mounted at its staging path " + staging + "\n"
                + detail + "next: check the plugin's log for this volume, then delete the pod: kubelet unstages the"
                + " volume and stages it again for the pod's replacement\n"
                + "db1     PublicationMissing   volume db1 is no longer mounted at its publication " + target + "\n"
                + detail + "next: delete the pod: kubelet publishes the volume again for the pod's replacement\n"),
                text.out());
        Run json = status("-o", "json");
        assertEquals(1, json.code());
        assertTrue(json.out().contains("\"healthy\":false"), json.out());
        assertTrue(json.out().contains("\"stagingMounted\":false"), json.out());
        assertTrue(json.out().contains("{\"reason\":\"PublicationMissing\",\"severity\":\"INACCESSIBLE\","), json.out());
    }

    @Test
    void aDeviceGoneIsTheOneProblemOfItsVolume() throws IOException {
        stageDb1();
        mounts(staging.toString(), target.toString());
        Files.delete(sysfs.sys().resolve("dev/block/7:3"));

        Run json = status("-o", "json");
        assertEquals(1, json.code());
        assertTrue(json.out().contains("\"present\":false"), json.out());
        assertTrue(json.out().contains("\"problems\":[{\"reason\":\"DeviceMissing\",\"severity\":\"INACCESSIBLE\","
                + "\"message\":\"device /dev/loop3 (7:3) of volume db1 is gone from the node\",\"next\":\"check that the"
                + " storage still presents the LUN to this node, and run blocknode doctor;"), json.out());
        assertTrue(status().out().contains("GONE"));
    }

    /** What the plugin's sweep kept is listed, what, where and why, from its report in the state directory. */
    @Test
    void theLeftoversTheSweepKeptAreListedWithWhyAndAreProblems() throws IOException {
        stageDb1();
        mounts(staging.toString(), target.toString());
        String session = "iSCSI session4 of iqn.2026-01.dev.blocknode:t via 127.0.0.1:3260: no staging record names it,"
                + " but it carries SCSI device(s) [3:0:0:7]; left logged in";
        new RecordStore(stateDir, BOOT).saveKeptLeftovers(List.of(session));

        Run text = status();
        assertEquals(1, text.code(), text.out() + text.err());
        assertTrue(text.out().contains("-       LeftoversKept  " + session), text.out());
        assertTrue(text.out().contains("LEFT BY THE REPAIR LOOP'S SWEEP (no record names them; as of "), text.out());
        Run json = status("-o", "json");
        assertTrue(json.out().contains(",\"kept\":[\"" + session + "\"],\"next\":\"if the line names a failure, run"
                + " blocknode doctor"), json.out());

        new RecordStore(stateDir, BOOT).saveKeptLeftovers(List.of());
        assertEquals(0, status().code(), "nothing kept any more: the report is gone");
    }

    /** After a reboot the number 7:3 is there (another device's), but the record's number is of that boot. */
    @Test
    void aRecordOfAnEarlierBootIsNotInPlaceWhateverHasItsNumberNow() throws IOException {
        stageDb1();
        RecordStore earlier = new RecordStore(stateDir, BOOT);
        earlier.save(earlier.load("db1").orElseThrow().toBuilder().setBootId("11111111-0000-4000-8000-000000000001")
                .build());
        mounts();

        Run json = status("-o", "json");
        assertEquals(1, json.code());
        assertTrue(json.out().contains("\"present\":false"), json.out());
        assertTrue(json.out().contains("volume db1 was staged in an earlier boot of the node"), json.out());
    }

    @Test
    void anUnreadableRecordIsListedWithItsFileAndReason() throws IOException {
        stageDb1();
        mounts(staging.toString(), target.toString());
        Path bad = stateDir.resolve("volumes").resolve("ab".repeat(32) + ".pb");
        Files.writeString(bad, "not a record");

        Run text = status();
        assertEquals(1, text.code());
        assertTrue(text.out().contains("RecordUnreadable"), text.out());
        assertTrue(text.out().contains("UNREADABLE RECORDS\nFILE"), text.out());
        assertTrue(text.out().contains(bad.toString()), text.out());
        Run json = status("-o", "json");
        assertTrue(json.out().contains("\"unreadableRecords\":[{\"file\":\"" + bad + "\",\"reason\":\"staging record "),
                json.out());
        // the healthy volume is still shown whole
        assertTrue(json.out().contains("\"volumeId\":\"db1\""), json.out());
    }

    @Test
    void oneVolumeByIdAndAnUnknownOneExitsThree() throws IOException {
        stageDb1();
        mounts(staging.toString(), target.toString());
        assertEquals(0, status("--volume", "db1").code());
        Run unknown = status("--volume", "nope", "-o", "json");
        assertEquals(3, unknown.code());
        assertTrue(unknown.err().contains("no record of volume nope"), unknown.err());
        assertTrue(unknown.out().contains("\"volumes\":[]"), unknown.out());
    }

    @Test
    void badFlagsAndAnUnreadableStateDirExitTwo() throws IOException {
        mounts();
        assertEquals(2, status("--bogus", "x").code());
        assertEquals(2, status("-o", "yaml").code());
        assertEquals(2, status("--volume").code());
        Run missing = status("--state-dir", dir.resolve("absent").toString());
        assertEquals(2, missing.code());
        assertTrue(missing.err().contains("is not a directory"), missing.err());
        assertFalse(Files.exists(dir.resolve("absent")));
    }

    @Test
    void anEmptyStateDirHasNoVolumesAndIsLeftEmpty() throws IOException {
        Files.createDirectories(stateDir);
        mounts();
        Run run = status();
        assertEquals(0, run.code());
        assertEquals("no problems: 0 volume(s), all healthy\n", run.out());
        try (Stream<Path> files = Files.list(stateDir)) {
            assertEquals(0, files.count());
        }
    }

    @Test
    void statusChangesNothingOnDisk() throws Exception {
        stageDb1();
        mounts(staging.toString());
        // What a RecordStore would change on opening: an earlier boot's journal, a torn tail on this boot's.
        Path earlier = Files.createDirectories(stateDir.resolve("publications/11111111-2222-3333-4444-555555555555"));
        Files.writeString(earlier.resolve("journal"), "old");
        Path journal;
        try (Stream<Path> files = Files.list(stateDir.resolve("publications").resolve(BOOT))) {
            journal = files.findFirst().orElseThrow();
        }
        Files.write(journal, new byte[]{1, 2, 3}, java.nio.file.StandardOpenOption.APPEND);
        Files.writeString(stateDir.resolve("volumes").resolve("cd".repeat(32) + ".pb"), "garbage");
        Map<String, String> before = listing(stateDir);
        Thread.sleep(20);

        assertEquals(1, status().code());
        assertEquals(1, status("-o", "json").code());
        assertEquals(before, listing(stateDir));
    }

    /**
     * {@code mkfifo STATE/publications/BOOT/journal} hung status for ever (the journal was opened blocking);
     * status.md promises exit 2. Every file status reads is looked at before it is opened, and never waited on: a
     * FIFO at this boot's journal, the sweep's report or the boot id is exit 2 naming it, one named like a record is
     * an unreadable record (exit 1), and none of them is waited on.
     */
    @Test
    void aFifoAtAnyFileStatusReadsIsRefusedAtOnceNeverWaitedOn() throws Exception {
        stageDb1();
        mounts(staging.toString(), target.toString());
        Path journal = stateDir.resolve("publications").resolve(BOOT).resolve("journal");
        Path kept = stateDir.resolve("sweep-kept");
        Path bootId = sysfs.paths().bootId();
        Path record = stateDir.resolve("volumes").resolve("ef".repeat(32) + ".pb");
        for (Path file : List.of(journal, kept, bootId)) {
            byte[] before = Files.exists(file) ? Files.readAllBytes(file) : null;
            Files.deleteIfExists(file);
            mkfifo(file);
            Run run = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> status(), file.toString());
            assertEquals(2, run.code(), file + ": " + run.out() + run.err());
            assertTrue(run.err().contains(file + " is a FIFO, not a regular file"), run.err());
            Files.delete(file);
            if (before != null) {
                Files.write(file, before);
            }
        }
        mkfifo(record);
        Run run = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> status("-o", "json"));
        assertEquals(1, run.code(), run.out() + run.err());
        assertTrue(run.out().contains("\"unreadableRecords\":[{\"file\":\"" + record + "\",\"reason\":\"staging record "
                + record + " is a FIFO, not a regular file\""), run.out());
        assertTrue(run.out().contains("\"volumeId\":\"db1\""), "the other volume is still shown: " + run.out());
    }

    private static void mkfifo(Path file) throws Exception {
        assertEquals(0, new ProcessBuilder("mkfifo", file.toString()).start().waitFor());
    }

    /**
     * An unknown {@code --volume}, a {@code --state-dir}, and a sweep report holding escape sequences were
     * printed raw (a screen cleared, a line forged); a volume id with a right-to-left override too. Everything
     * status prints is escaped as a log line is.
     */
    @Test
    void whatStatusPrintsIsEscapedWhateverTheInput() throws IOException {
        stageDb1();
        mounts(staging.toString(), target.toString());
        String hostile = "x\u001b[2J\nFORGED\u202e\r";
        List<Run> runs = new ArrayList<>();
        Run unknown = status("--volume", hostile);
        assertEquals(3, unknown.code());
        assertTrue(unknown.err().contains("no record of volume x\\x1b[2J\\nFORGED\\u202e\\r"), unknown.err());
        runs.add(unknown);
        runs.add(status("--volume", hostile, "-o", "json"));
        Run noDir = status("--state-dir", "/no\u001b[2J\nX");
        assertEquals(2, noDir.code());
        assertTrue(noDir.err().contains("/no\\x1b[2J\\nX"), noDir.err());
        runs.add(noDir);
        runs.add(status("--bogus\u001b[2J\n", "x"));

        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(store.load("db1").orElseThrow().toBuilder().setVolumeId("db1\u202e\u001b[31m").build());
        store.saveKeptLeftovers(List.of("session \u001b[2J of iqn\u202e: kept"));
        Run text = status();
        assertTrue(text.out().contains("session \\x1b[2J of iqn\\u202e: kept"), text.out());
        runs.add(text);
        Run json = status("-o", "json");
        assertTrue(json.out().contains("\"db1\\u202e\\u001b[31m\""), json.out());
        runs.add(json);
        Files.writeString(stateDir.resolve("sweep-kept"), "at \u001b[2J\nFORGED \u202e\nsomething\n");
        Run badReport = status();
        assertEquals(2, badReport.code(), badReport.err());
        runs.add(badReport);
        for (Run run : runs) {
            TerminalText.assertSafe(run.out());
            TerminalText.assertSafe(run.err());
            assertFalse((run.out() + run.err()).lines().anyMatch(line -> line.startsWith("FORGED")),
                    run.out() + run.err());
        }
    }

    /**
     * What the state directory shows of a stage that failed: the record kubelet's retry continues from, in ATTACHING
     * (the attach failed or was cut short: no device yet) or STAGING (a device attached, then the format or mount
     * failed), and an unstage that did not finish (UNSTAGING). Status cannot tell such a call running from failed,
     * but none of them is a usable volume: none reads "ok", each is a problem saying since when, with its next step.
     */
    @Test
    void aStageOrUnstageThatDidNotFinishIsAProblemWithItsNextStepNeverOk() throws IOException {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(StagingRecord.newBuilder().setVolumeId("attaching").setPhase(StagePhase.ATTACHING)
                .setTransport("iscsi").setStagingPath(staging.toString())
                .setMount(MountAccessRecord.newBuilder().setFsType("ext4")).build());
        store.save(StagingRecord.newBuilder().setVolumeId("staging").setPhase(StagePhase.STAGING).setTransport("local")
                .setStagingPath(kubelet.resolve("plugins/kubernetes.io/csi/block.csi.blocknode.dev/s/globalmount")
                        .toString())
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/loop4").setMajor(7).setMinor(4))
                .setMount(MountAccessRecord.newBuilder().setFsType("xfs")).setBootId(BOOT).build());
        store.save(StagingRecord.newBuilder().setVolumeId("unstaging").setPhase(StagePhase.UNSTAGING)
                .setTransport("local").setStagingPath(staging.toString())
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/loop3").setMajor(7).setMinor(3))
                .setMount(MountAccessRecord.newBuilder().setFsType("ext4")).setBootId(BOOT).build());
        sysfs.addBlockDevice("loop3", new DeviceNumber(7, 3)); // loop4 is gone
        mounts();

        Run text = status();
        assertEquals(1, text.code(), text.out());
        assertTrue(text.out().startsWith("PROBLEMS\n"), text.out());
        List<String> lines = text.out().lines().toList();
        List<String> rows = lines.subList(lines.indexOf("VOLUMES") + 2, lines.indexOf("VOLUMES") + 5);
        for (String row : rows) {
            assertTrue(row.endsWith("  1"), "one problem, never ok: " + row);
        }
        assertTrue(text.out().contains("attaching  StageIncomplete    NodeStageVolume of volume attaching has not"
                + " finished: its record is in phase ATTACHING since 20"), text.out());
        assertTrue(text.out().contains(" (a call still running, or one that failed or was cut short)\n"
                + " ".repeat("attaching  StageIncomplete    ".length()) + "next: check the plugin's log for"
                + " NodeStageVolume of this volume; kubelet retries it"), text.out());
        assertTrue(text.out().contains("NodeStageVolume of volume staging has not finished: its record is in phase"
                + " STAGING since "), text.out());
        assertTrue(text.out().contains("; its device /dev/loop4 (7:4) is gone from the node\n"), text.out());
        assertTrue(text.out().contains("unstaging  UnstageIncomplete  NodeUnstageVolume of volume unstaging has not"
                + " finished"), text.out());
        assertTrue(text.out().contains("next: check the plugin's log for NodeUnstageVolume of this volume"), text.out());

        Run json = status("-o", "json");
        assertEquals(1, json.code());
        assertTrue(json.out().contains("\"healthy\":false"), json.out());
        assertTrue(json.out().contains("{\"reason\":\"StageIncomplete\",\"severity\":\"INACCESSIBLE\",\"message\":"
                + "\"NodeStageVolume of volume attaching has not finished"), json.out());
        assertTrue(json.out().contains("\"next\":\"check the plugin's log for NodeStageVolume of this volume;"),
                json.out());
        assertTrue(json.out().contains("{\"reason\":\"UnstageIncomplete\","), json.out());
        assertEquals(3, json.out().split("\"updatedAt\":\"20", -1).length - 1, json.out());
        assertEquals(1, status("--volume", "attaching").code(), "one volume alone is not ok either");
    }

    /** Every problem, whatever shows it (a volume, an unreadable record, a mount, a leftover), says what to do next. */
    @Test
    void everyProblemNamesItsNextStep() throws IOException {
        stageDb1();
        Path lost = kubelet.resolve("plugins/kubernetes.io/csi/block.csi.blocknode.dev/def/globalmount");
        Files.writeString(sysfs.paths().mountInfo(), "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                + "100 22 7:3 / " + staging + " rw,relatime shared:9 - ext4 /dev/loop3 rw\n"
                + "101 22 7:3 / " + dir.resolve("mnt/extra") + " rw,relatime shared:9 - ext4 /dev/loop3 rw\n"
                + "103 22 8:48 / " + lost + " rw,relatime shared:10 - xfs /dev/sdd rw\n");
        Files.writeString(stateDir.resolve("volumes").resolve("ab".repeat(32) + ".pb"), "not a record");
        new RecordStore(stateDir, BOOT).saveKeptLeftovers(List.of("iSCSI session4 of iqn.2026-01.dev.blocknode:t via"
                + " 127.0.0.1:3260: no staging record names it; its logout failed"));

        Run text = status();
        assertEquals(1, text.code(), text.out());
        List<String> lines = text.out().lines().toList();
        int end = lines.indexOf("");
        List<String> rows = lines.subList(2, end);
        assertEquals(10, rows.size(), "five problems, each with its next step: " + rows);
        for (int i = 0; i < rows.size(); i += 2) {
            assertFalse(rows.get(i).isBlank(), rows.toString());
            assertTrue(rows.get(i + 1).matches(" {10,}next: \\S.*"), "the next step of " + rows.get(i) + ": "
                    + rows.get(i + 1));
        }

        Run json = status("-o", "json");
        for (String object : List.of("\"reason\":\"PublicationMissing\"", "\"reason\":\"staging record ",
                "\"volumeId\":null,", "\"volumeId\":\"db1\",\"message\"", "\"kept\":[")) {
            int at = json.out().indexOf(object);
            assertTrue(at >= 0, object + " in " + json.out());
            int close = json.out().indexOf('}', at);
            assertTrue(json.out().substring(at, close).contains(",\"next\":\""), "a next step for " + object + ": "
                    + json.out().substring(at, close));
        }
    }

    /** Every path under {@code root}, with its size and modification time. */
    private static Map<String, String> listing(Path root) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> all = Files.walk(root)) {
            for (Path path : all.toList()) {
                BasicFileAttributes a = Files.readAttributes(path, BasicFileAttributes.class);
                out.put(root.relativize(path).toString(), a.size() + " " + a.lastModifiedTime().toMillis() + " "
                        + a.lastAccessTime().equals(a.lastAccessTime()));
            }
        }
        return out;
    }
}
