package dev.blocknode.transport.fc;

import dev.blocknode.metrics.PathSweeps;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ForgedJournalEntry;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.ScanJournal;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sweep of leftover LUNs over FC, on a fabricated node (two HBA ports, each seeing the array's target port
 * 0x500601603ba0415a) with scripted commands: the disks and map of a LUN blocknode's scan journal proves it scanned
 * in behind that port, that no staging record names and that nothing mounts, holds or opens, are removed (map first,
 * as unstage does); everything else is kept and reported, each refusal on its own. Every command is scripted: a test
 * that expects none proves that nothing was flushed or deleted. Also: every targeted scan, at stage and at a repair,
 * comes after its entry is durable, and none is made without it; unstage and the undo drop the entries.
 */
class FcLeftoverLunSweepUnitTest {

    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final String OTHER_NAA = "600a098038303053453f463045727a41";
    private static final String OTHER_WWID = "3" + OTHER_NAA;
    private static final String TARGET = "0x500601603ba0415a";
    private static final String WWPN = "500601603ba0415a";
    private static final ScsiAddress PATH_1 = new ScsiAddress(1, 0, 0, 3);
    private static final ScsiAddress PATH_2 = new ScsiAddress(2, 0, 1, 3);
    private static final ScsiAddress LUN5_1 = new ScsiAddress(1, 0, 0, 5);
    private static final ScsiAddress LUN5_2 = new ScsiAddress(2, 0, 1, 5);

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private RecordingBlockDevices block;
    private ScanJournal scans;
    private FcTransport transport;
    /** The scan journal's FC entries as each targeted scan found them, in the order of the scans. */
    private final List<List<ScanJournal.Entry>> journaledAtScan = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    @BeforeEach
    void fabricate() throws IOException {
        Metrics.addRegistry(registry);
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        block = new RecordingBlockDevices(sysfs.paths());
        scans = ScanJournal.in(temp.resolve("state"));
        transport = transport(scans);
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
    }

    private FcTransport transport(ScanJournal journal) {
        SysfsWriter watching = (attribute, value) -> {
            if (attribute.getFileName().toString().equals("scan")) {
                journaledAtScan.add(journal.all(FcTransport.NAME));
            }
            sysfs.write(attribute, value);
        };
        return new FcTransport(new Host(sysfs.paths(), commands, new QueryOnlyMounter(), block), watching,
                new ManualClock().waiter(), () -> false,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)),
                FenceSettings.DEFAULTS, journal);
    }

    @AfterEach
    void everyScriptedCommandRan() {
        Metrics.removeRegistry(registry);
        commands.assertAllConsumed();
    }

    private static AttachRequest request(String volume, long lun) {
        return new AttachRequest(volume, Map.of("targetWWNs", TARGET, "lun", Long.toString(lun)), Map.of(),
                Secrets.NONE);
    }

    /** What a stage killed after its scans leaves once its record is gone: LUN 3's sdb and sdc under mpatha. */
    private void leftover(boolean journaled) throws IOException {
        if (journaled) {
            scans.record(FcLeftoverLuns.entry(WWPN, 3));
        }
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addDisk(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
    }

    private void expectMapOpen(String map, int openers) {
        commands.expect("dmsetup", "info", "-c", "--noheadings", "-o", "open", map).succeeds("  " + openers + "\n");
    }

    private void expectFlush(String map, String kernelName) {
        commands.expect("dmsetup", "message", map, "0", "fail_if_no_path");
        commands.expect("multipath", "-f", map).andDo(c -> sysfs.removeMap(kernelName));
    }

    private double swept(String kind) {
        return registry.get(PathSweeps.NAME).tags("transport", "fc", "kind", kind, "outcome", PathSweeps.REMOVED)
                .counter().count();
    }

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

    @Test
    void aLeftoverLunsMapAndBothDisksAreRemovedMapFirst() throws Exception {
        leftover(true);
        expectMapOpen("mpatha", 0);
        expectFlush("mpatha", "dm-0");
        double maps = swept(PathSweeps.MAP);
        double disks = swept(PathSweeps.DISK);

        OrphanSweep swept = repairs().sweepOrphans(List::of);

        assertFalse(sysfs.hasDisk("sdb"));
        assertFalse(sysfs.hasDisk("sdc"));
        assertEquals(3, swept.removed().size(), swept.removed().toString());
        assertTrue(swept.removed().get(0).startsWith("multipath map mpatha"), swept.removed().toString());
        assertTrue(swept.removed().get(1).startsWith("disk sdb"), swept.removed().toString());
        assertTrue(swept.removed().get(2).startsWith("disk sdc"), swept.removed().toString());
        assertEquals(List.of(), swept.kept());
        assertEquals(1, swept(PathSweeps.MAP) - maps);
        assertEquals(2, swept(PathSweeps.DISK) - disks);
        assertEquals(List.of(), scans.all(FcTransport.NAME), "the proof goes with what it proved");
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of), "a second pass finds nothing");
    }

    @Test
    void anotherVolumeBehindTheSameTargetPortIsUntouched() throws Exception {
        leftover(true);
        scans.record(FcLeftoverLuns.entry(WWPN, 5));
        sysfs.addDisk(LUN5_1, "sdd", new DeviceNumber(8, 48), "naa." + OTHER_NAA);
        sysfs.addDisk(LUN5_2, "sde", new DeviceNumber(8, 64), "naa." + OTHER_NAA);
        sysfs.addMap(1, "mpathb", OTHER_WWID, List.of("sdd", "sde"));
        expectMapOpen("mpatha", 0);
        expectFlush("mpatha", "dm-0");

        OrphanSweep swept = repairs().sweepOrphans(() -> List.of(request("vol-staged", 5)));

        assertEquals(3, swept.removed().size(), swept.removed().toString());
        assertTrue(sysfs.hasDisk("sdd") && sysfs.hasDisk("sde") && sysfs.hasMap("dm-1"), "LUN 5 is a record's");
        assertEquals(List.of(FcLeftoverLuns.entry(WWPN, 5)), scans.all(FcTransport.NAME));
    }

    @Test
    void aLeftoverDiskWithoutAMapIsDeleted() throws Exception {
        scans.record(FcLeftoverLuns.entry(WWPN, 3));
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA);

        OrphanSweep swept = repairs().sweepOrphans(List::of);

        assertFalse(sysfs.hasDisk("sdb"));
        assertEquals(1, swept.removed().size(), swept.removed().toString());
        assertTrue(swept.removed().get(0).startsWith("disk sdb"), swept.removed().toString());
    }

    @Test
    void aMountedMapIsKeptAndReported() throws Exception {
        leftover(true);
        block.claimed(sysfs.paths().dev().resolve("dm-0"), true);
        assertKept(repairs().sweepOrphans(List::of), "is mounted or held open exclusively");
    }

    @Test
    void aMountedDiskIsKeptAndReported() throws Exception {
        scans.record(FcLeftoverLuns.entry(WWPN, 3));
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        block.claimed(sysfs.paths().dev().resolve("sdb"), true);
        assertKept(repairs().sweepOrphans(List::of), "disk sdb");
    }

    @Test
    void anOpenMapIsKeptAndReported() throws Exception {
        leftover(true);
        expectMapOpen("mpatha", 1);
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
        // the same LUN behind another array port, which blocknode never scanned: an administrator's path
        sysfs.remotePort(1, 0, 2, "0x500601683ba0415a", "Online", 2);
        sysfs.addDisk(new ScsiAddress(1, 0, 2, 3), "sdf", new DeviceNumber(8, 80), "naa." + NAA);
        sysfs.addSlave("dm-0", "sdf");
        assertKept(repairs().sweepOrphans(List::of), "also has path(s) [sdf]");
    }

    @Test
    void aDiskWithoutAWwidIsKept() throws Exception {
        scans.record(FcLeftoverLuns.entry(WWPN, 3));
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), null, null, "running");
        assertKept(repairs().sweepOrphans(List::of), "reports no WWID");
    }

    @Test
    void aLunARecordOfAnyPhaseNamesIsNeverTouched() throws Exception {
        leftover(true);
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(() -> List.of(request("vol-attaching", 3))));
        assertTrue(sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc"));
        assertEquals(1, scans.all(FcTransport.NAME).size());
    }

    @Test
    void aRecordWrittenBeforeTheLockIsTakenKeepsTheLun() throws Exception {
        leftover(true);
        AtomicInteger reads = new AtomicInteger();
        // the first read finds no record; a stage records its intent before the sweep holds the target's lock
        OrphanSweep swept = repairs().sweepOrphans(() -> reads.incrementAndGet() == 1 ? List.of()
                : List.of(request("vol-staging", 3)));
        assertEquals(OrphanSweep.NONE, swept);
        assertEquals(2, reads.get(), "read again under the lock");
        assertTrue(sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc"));
    }

    @Test
    void aLunWithoutAJournalEntryIsNeverTouched() throws Exception {
        leftover(false); // an administrator's LUN, or one of a blocknode older than the journal
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of));
        assertTrue(sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc"));
    }

    /**
     * Entries forged by root in the state directory, for the administrator's LUN 3 behind the same target port: a LUN
     * or WWPN spelled otherwise than blocknode writes them, a LUN beyond what the kernel's scan takes, a target of a
     * path. Each is ignored, nothing of it is looked up or removed, and it is not reported as a leftover.
     */
    @Test
    void entriesThatAreNotAWwpnAndLunAsBlocknodeWritesThemAreIgnored() throws Exception {
        leftover(false);
        Path journal = temp.resolve("state").resolve(ScanJournal.DIRECTORY);
        List<Path> forged = List.of(ForgedJournalEntry.write(journal, "fc", "03", WWPN),
                ForgedJournalEntry.write(journal, "fc", "3", TARGET.toUpperCase(java.util.Locale.ROOT)),
                ForgedJournalEntry.write(journal, "fc", "3", "../../" + WWPN),
                ForgedJournalEntry.write(journal, "fc", "3", WWPN, WWPN),
                ForgedJournalEntry.write(journal, "fc", "12345678901234567", WWPN));
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of));
        assertTrue(sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc"));
        forged.forEach(file -> assertTrue(Files.exists(file), "left alone: " + file));
    }

    @Test
    void anUnreadableRecordStopsTheSweep() throws Exception {
        leftover(true);
        assertThrows(VolumeException.class, () -> repairs().sweepOrphans(() -> {
            throw VolumeException.internal("record unreadable", null);
        }));
        assertTrue(sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc"));
    }

    @Test
    void anEntryWhoseLunHasNoDiskIsDropped() throws Exception {
        scans.record(FcLeftoverLuns.entry(WWPN, 3));
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of));
        assertEquals(List.of(), scans.all(FcTransport.NAME));
    }

    @Test
    void anEntryOfAnUnknownTargetPortIsDropped() throws Exception {
        scans.record(FcLeftoverLuns.entry("5006016000000001", 3)); // the array port is gone from the fabric
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of));
        assertEquals(List.of(), scans.all(FcTransport.NAME));
    }

    @Test
    void aPortBackUnderAnotherRportNumberAndHostIsFoundByItsWwpn() throws Exception {
        scans.record(FcLeftoverLuns.entry(WWPN, 3));
        sysfs.fcHost(7, "0x10000000c9a1b2c7", "Online"); // the HBA port made again (FCoE): another host
        sysfs.remotePort(7, 0, 4, TARGET, "Online", 0);
        sysfs.addDisk(new ScsiAddress(7, 0, 0, 3), "sdg", new DeviceNumber(8, 96), "naa." + NAA);
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertFalse(sysfs.hasDisk("sdg"), swept.toString());
    }

    // ---- the journal at stage, repair, unstage and undo ------------------------------------------------------

    private void lunPresented() {
        sysfs.presentLun(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        sysfs.presentLun(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA, null);
    }

    private Attachment staged() throws VolumeException {
        lunPresented();
        commands.expect("multipath", "-a", WWID).succeeds("wwid '" + WWID + "' added\n");
        commands.expect("multipath", WWID).andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        return transport.attach(request("vol-fc", 3));
    }

    @Test
    void theStageJournalsTheLunBeforeEachScan() throws Exception {
        staged();
        assertEquals(2, journaledAtScan.size(), "one targeted scan per HBA port");
        for (List<ScanJournal.Entry> atScan : journaledAtScan) {
            assertEquals(List.of(FcLeftoverLuns.entry(WWPN, 3)), atScan, "the entry is there before the scan");
        }
        assertEquals(List.of(FcLeftoverLuns.entry(WWPN, 3)), scans.all(FcTransport.NAME));
    }

    @Test
    void noStageScanIsMadeWhoseEntryCannotBeWritten() throws Exception {
        FcTransport unjournaled = transport(brokenJournal());
        lunPresented();
        assertThrows(VolumeException.class, () -> unjournaled.attach(request("vol-fc", 3)));
        assertEquals(List.of(), journaledAtScan, "no scan");
        assertFalse(sysfs.hasDisk("sdb") || sysfs.hasDisk("sdc"));
    }

    @Test
    void theRepairJournalsTheLunBeforeItsScan() throws Exception {
        Attachment staged = staged();
        sysfs.loseRemotePort(2, 0, 1);
        scans.forget(FcLeftoverLuns.entry(WWPN, 3)); // as after a stage by a blocknode older than the journal
        journaledAtScan.clear();
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.presentLun(PATH_2, "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipath", WWID).andDo(c -> sysfs.addSlave("dm-0", "sdd"));

        RepairedPaths repair = repairs().repair(request("vol-fc", 3), staged, Optional.empty());

        assertEquals(List.of("2:0:1:3=sdd"), repair.restored(), repair.toString());
        assertEquals(List.of(List.of(FcLeftoverLuns.entry(WWPN, 3))), journaledAtScan);
    }

    @Test
    void aRepairThatCannotJournalScansNothing() throws Exception {
        Attachment staged = staged();
        sysfs.loseRemotePort(2, 0, 1);
        FcTransport unjournaled = transport(brokenJournal());
        journaledAtScan.clear();
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.presentLun(PATH_2, "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);

        assertThrows(VolumeException.class,
                () -> unjournaled.pathRepair().orElseThrow().repair(request("vol-fc", 3), staged, Optional.empty()));

        assertEquals(List.of(), journaledAtScan, "no scan");
        assertFalse(sysfs.hasDisk("sdd"));
    }

    @Test
    void unstageDropsTheEntryWithTheDisks() throws Exception {
        Attachment staged = staged();
        expectFlush("mpatha", "dm-0");
        transport.detach(staged);
        assertFalse(sysfs.hasDisk("sdb") || sysfs.hasDisk("sdc"));
        assertEquals(List.of(), scans.all(FcTransport.NAME));
    }

    @Test
    void theUndoOfAnInterruptedAttachDropsTheEntryOnlyWhenNoDiskStays() throws Exception {
        scans.record(FcLeftoverLuns.entry(WWPN, 3));
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        block.claimed(sysfs.paths().dev().resolve("sdb"), true);
        transport.abandon(request("vol-fc", 3));
        assertTrue(sysfs.hasDisk("sdb"), "something holds it: it stays");
        assertEquals(1, scans.all(FcTransport.NAME).size(), "and so does the proof, for the sweep");

        block.claimed(sysfs.paths().dev().resolve("sdb"), false);
        transport.abandon(request("vol-fc", 3));
        assertFalse(sysfs.hasDisk("sdb"));
        assertEquals(List.of(), scans.all(FcTransport.NAME));
    }

    private ScanJournal brokenJournal() throws IOException {
        Files.createDirectories(temp.resolve("broken"));
        Files.writeString(temp.resolve("broken/" + ScanJournal.DIRECTORY), "not a directory");
        return ScanJournal.in(temp.resolve("broken"));
    }

    private void assertKept(OrphanSweep swept, String why) throws IOException {
        assertEquals(List.of(), swept.removed());
        assertTrue(sysfs.hasDisk("sdb"), "the disk stays");
        assertTrue(swept.kept().stream().anyMatch(k -> k.contains(why)), swept.kept().toString());
        assertEquals(1, scans.all(FcTransport.NAME).size(), "and its entry, for the next pass");
    }
}
