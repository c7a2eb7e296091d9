package dev.blocknode.transport.iscsi;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.testing.ScriptedIscsiadm;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.ScanJournal;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sweep of leftover LUNs over a fabricated node and scripted commands: the disk and map of a LUN blocknode's scan
 * journal proves it scanned in, that no staging record names and that nothing mounts, holds or opens, are removed (map
 * first, as unstage does); everything else is kept and reported, each refusal on its own. Every command is scripted:
 * a test that expects none proves that nothing was flushed, deleted or logged out.
 */
class LeftoverLunSweepUnitTest {

    private static final String IQN = "iqn.2003-01.org.linux-iscsi.array:sn.1234";
    private static final String PORTAL = "127.0.0.1:3260";
    private static final IscsiPath PATH = new IscsiPath(IQN, Portal.parse(PORTAL), "default");
    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final ScsiAddress LUN3 = new ScsiAddress(3, 0, 0, 3);

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private ScriptedIscsiadm iscsiadm;
    private RecordingBlockDevices block;
    private Path database;
    private LoginJournal logins;
    private ScanJournal scans;
    private IscsiTransport transport;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        database = Files.createDirectories(temp.resolve("etc-iscsi"));
        iscsiadm = new ScriptedIscsiadm(commands, sysfs, database, IQN);
        block = new RecordingBlockDevices(sysfs.paths());
        logins = LoginJournal.in(temp.resolve("state"));
        scans = ScanJournal.in(temp.resolve("state"));
        transport = transport(scans);
    }

    private IscsiTransport transport(ScanJournal journal) {
        return IscsiTransport.over(new Host(sysfs.paths(), commands, new QueryOnlyMounter(), block),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, new ManualClock().waiter(),
                () -> false,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .journals(logins, journal).build();
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    private static AttachRequest request(String phaseIrrelevantVolume) {
        return new AttachRequest(phaseIrrelevantVolume, Map.of("targetPortal", PORTAL, "iqn", IQN, "lun", "3"),
                Map.of(), Secrets.NONE);
    }

    /** A session blocknode logged in to (session 1 on host 3), journaled, with its node record. */
    private void loggedIn() throws IOException {
        logins.record(PATH);
        Path record = database.resolve("nodes/" + IQN + "/127.0.0.1,3260");
        Files.createDirectories(record.getParent());
        Files.writeString(record, "node.name = " + IQN + "\n");
        sysfs.iscsiSession(1, 3, IQN, "127.0.0.1", 3260);
    }

    /** What a stage killed after its scan leaves once its record is gone: LUN 3's disk sdb under map mpatha. */
    private void leftover(boolean journaled) throws IOException {
        loggedIn();
        if (journaled) {
            scans.record(IscsiLeftoverLuns.entry(PATH, 3));
        }
        sysfs.addDisk(LUN3, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb"));
    }

    private void expectMapOpen(int openers) {
        commands.expect("dmsetup", "info", "-c", "--noheadings", "-o", "open", "mpatha")
                .succeeds("  " + openers + "\n");
    }

    private void expectFlush() {
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
    }

    private void expectLogoutAndDelete() {
        commands.expect(iscsiadm.node(PORTAL, "--logout")).andDo(c -> sysfs.removeIscsiSession(1, 3));
        commands.expect(iscsiadm.node(PORTAL, "-o", "delete"))
                .andDo(c -> Files.delete(database.resolve("nodes/" + IQN + "/127.0.0.1,3260")));
    }

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

    @Test
    void aLeftoverDiskAndMapAreRemovedMapFirstThenTheSessionInTheSamePass() throws Exception {
        leftover(true);
        expectMapOpen(0);
        expectFlush();
        expectLogoutAndDelete();
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertFalse(sysfs.hasDisk("sdb"));
        assertEquals(4, swept.removed().size(), swept.removed().toString());
        assertTrue(swept.removed().get(0).startsWith("multipath map mpatha"), swept.removed().toString());
        assertTrue(swept.removed().get(1).startsWith("disk sdb"), swept.removed().toString());
        assertEquals(List.of(), swept.kept());
        assertEquals(List.of(), scans.all(IscsiTransport.NAME), "the proof goes with what it proved");
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of), "a second pass finds nothing");
    }

    @Test
    void aLeftoverDiskWithoutAMapIsDeleted() throws Exception {
        loggedIn();
        scans.record(IscsiLeftoverLuns.entry(PATH, 3));
        sysfs.addDisk(LUN3, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        expectLogoutAndDelete();
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertFalse(sysfs.hasDisk("sdb"));
        assertTrue(swept.removed().get(0).startsWith("disk sdb"), swept.removed().toString());
    }

    @Test
    void aMountedMapIsKeptAndReported() throws Exception {
        leftover(true);
        block.claimed(sysfs.paths().dev().resolve("dm-0"), true);
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertKept(swept, "is mounted or held open exclusively");
    }

    @Test
    void aMountedDiskIsKeptAndReported() throws Exception {
        loggedIn();
        scans.record(IscsiLeftoverLuns.entry(PATH, 3));
        sysfs.addDisk(LUN3, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        block.claimed(sysfs.paths().dev().resolve("sdb"), true);
        assertKept(repairs().sweepOrphans(List::of), "disk sdb");
    }

    @Test
    void anOpenMapIsKeptAndReported() throws Exception {
        leftover(true);
        expectMapOpen(1);
        assertKept(repairs().sweepOrphans(List::of), "is open (1 opener(s))");
    }

    @Test
    void aMapSomethingIsBuiltOnIsKept() throws Exception {
        leftover(true);
        sysfs.addDm(1, "crypt", "CRYPT-LUKS2-abc", List.of("dm-0"));
        assertKept(repairs().sweepOrphans(List::of), "is held by");
    }

    @Test
    void aMapWithAPathNoEntryProvesIsKept() throws Exception {
        leftover(true);
        sysfs.addDisk(new ScsiAddress(5, 0, 0, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.addSlave("dm-0", "sdc");
        assertKept(repairs().sweepOrphans(List::of), "also has path(s) [sdc]");
    }

    @Test
    void aLunARecordOfAnyPhaseNamesIsNeverTouched() throws Exception {
        leftover(true);
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(() -> List.of(request("vol-attaching"))));
        assertTrue(sysfs.hasDisk("sdb"));
        assertEquals(1, scans.all(IscsiTransport.NAME).size());
    }

    @Test
    void aLunWithoutAJournalEntryIsNeverTouched() throws Exception {
        leftover(false); // an administrator's LUN on blocknode's session, or one of a blocknode older than the journal
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertEquals(List.of(), swept.removed());
        assertTrue(sysfs.hasDisk("sdb"));
        assertTrue(swept.kept().get(0).contains("carries SCSI device(s) [3:0:0:3]"), swept.kept().toString());
    }

    @Test
    void anEntryWhoseLunHasNoDiskIsDropped() throws Exception {
        loggedIn();
        scans.record(IscsiLeftoverLuns.entry(PATH, 3));
        expectLogoutAndDelete();
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertEquals(List.of(), scans.all(IscsiTransport.NAME));
        assertEquals(2, swept.removed().size(), "the session and its record only: " + swept.removed());
    }

    @Test
    void anEntryWhoseSessionIsGoneIsDropped() throws Exception {
        scans.record(IscsiLeftoverLuns.entry(PATH, 3));
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of));
        assertEquals(List.of(), scans.all(IscsiTransport.NAME));
    }

    @Test
    void theAttachJournalsTheLunBeforeItsScan() throws Exception {
        sysfs.iscsiSession(1, 3, IQN, "127.0.0.1", 3260); // logged in already: no iscsiadm runs
        sysfs.presentLun(LUN3, "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        transport.attach(request("vol-iscsi"));
        assertEquals(List.of(IscsiLeftoverLuns.entry(PATH, 3)), scans.all(IscsiTransport.NAME));
        assertTrue(sysfs.writeLog().stream().anyMatch(w -> w.contains("scan")), sysfs.writeLog().toString());
    }

    @Test
    void noScanIsMadeWhoseEntryCannotBeWritten() throws Exception {
        Files.createDirectories(temp.resolve("broken"));
        Files.writeString(temp.resolve("broken/" + ScanJournal.DIRECTORY), "not a directory");
        IscsiTransport unjournaled = transport(ScanJournal.in(temp.resolve("broken")));
        sysfs.iscsiSession(1, 3, IQN, "127.0.0.1", 3260);
        sysfs.presentLun(LUN3, "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        assertThrows(dev.blocknode.outcome.VolumeException.class, () -> unjournaled.attach(request("vol-iscsi")));
        assertFalse(sysfs.writeLog().stream().anyMatch(w -> w.contains("scan")), sysfs.writeLog().toString());
        assertFalse(sysfs.hasDisk("sdb"));
    }

    private void assertKept(OrphanSweep swept, String why) {
        assertEquals(List.of(), swept.removed());
        assertTrue(sysfs.hasDisk("sdb"), "the disk stays");
        assertTrue(swept.kept().stream().anyMatch(k -> k.contains(why)), swept.kept().toString());
    }
}
