package dev.blocknode.transport.iscsi;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
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
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The orphan sweep over a fabricated node and a scripted iscsiadm: it logs out of and deletes only what blocknode's
 * login journal proves it made and no staging record names, and leaves everything else, each refusal on its own.
 * Every iscsiadm run is scripted: a test that expects nothing proves that nothing ran.
 */
class OrphanSessionSweepUnitTest {

    private static final String IQN = "iqn.2003-01.org.linux-iscsi.array:sn.1234";
    private static final String PORTAL = "127.0.0.1:3260";
    private static final IscsiPath PATH = new IscsiPath(IQN, Portal.parse(PORTAL), "default");

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private ScriptedIscsiadm iscsiadm;
    private Path database;
    private LoginJournal journal;
    private IscsiTransport transport;
    private final java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        database = Files.createDirectories(temp.resolve("etc-iscsi"));
        iscsiadm = new ScriptedIscsiadm(commands, sysfs, database, IQN);
        journal = LoginJournal.in(temp.resolve("state"));
        transport = transportEvery(Duration.ZERO);
    }

    /** Built with the repair loop's interval (zero: no loop). */
    private IscsiTransport transportEvery(Duration repairInterval) {
        return IscsiTransport.over(
                new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths())),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, new ManualClock().waiter(),
                () -> false,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .journals(journal, ScanJournal.NONE).repairInterval(repairInterval).clock(now::get).build();
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    private static AttachRequest request() {
        return new AttachRequest("vol-iscsi", Map.of("targetPortal", PORTAL, "iqn", IQN, "lun", "3"), Map.of(),
                Secrets.NONE);
    }

    /** What a stage leaves when it logged in and the undo of its attach could not log out: session 1 on host 3. */
    private void leftLoggedIn(boolean journaled) throws IOException {
        if (journaled) {
            journal.record(PATH);
        }
        Path record = database.resolve("nodes/" + IQN + "/127.0.0.1,3260");
        Files.createDirectories(record.getParent());
        Files.writeString(record, "node.name = " + IQN + "\n");
        sysfs.iscsiSession(1, 3, IQN, "127.0.0.1", 3260);
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
    void anOrphanSessionBlocknodeMadeIsLoggedOutAndItsRecordDeleted() throws Exception {
        leftLoggedIn(true);
        expectLogoutAndDelete();
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertEquals(List.of("session1 of " + PATH, "node record of " + PATH), swept.removed());
        assertEquals(List.of(), swept.kept());
        assertEquals(List.of(), journal.all(), "the proof goes with what it proved");
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of), "a second pass finds nothing");
    }

    @Test
    void aNodeRecordWhoseSessionIsGoneIsDeleted() throws Exception {
        leftLoggedIn(true);
        sysfs.removeIscsiSession(1, 3);
        commands.expect(iscsiadm.node(PORTAL, "-o", "delete"))
                .andDo(c -> Files.delete(database.resolve("nodes/" + IQN + "/127.0.0.1,3260")));
        assertEquals(List.of("node record of " + PATH), repairs().sweepOrphans(List::of).removed());
    }

    @Test
    void aSessionBlocknodeHasNoProofOfMakingIsNeverTouched() throws Exception {
        leftLoggedIn(false); // an administrator's, or one of a plugin older than the journal: same name, no entry
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(List::of));
    }

    @Test
    void aSessionAStagingRecordNamesIsNeverTouched() throws Exception {
        leftLoggedIn(true);
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(() -> List.of(request())));
        assertEquals(List.of(PATH), journal.all());
    }

    @Test
    void aSessionThatCarriesADiskIsReportedAndLeftLoggedIn() throws Exception {
        leftLoggedIn(true);
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 7), "sdb", new DeviceNumber(8, 16), "naa.60014052e3c1d6a5");
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertEquals(List.of(), swept.removed());
        assertEquals(1, swept.kept().size());
        assertTrue(swept.kept().get(0).contains("carries SCSI device(s) [3:0:0:7]"), swept.kept().get(0));
        assertEquals(List.of(PATH), journal.all());
    }

    /**
     * A stage that records its intent after the sweep's first read of the records is seen by the read after the
     * session's lock is taken: the sweep leaves the target to it.
     */
    @Test
    void aStageThatRecordsItsIntentMeanwhileKeepsItsTarget() throws Exception {
        leftLoggedIn(true);
        Deque<List<AttachRequest>> reads = new ArrayDeque<>(List.of(List.of(), List.of(request())));
        assertEquals(OrphanSweep.NONE, repairs().sweepOrphans(reads::poll));
        assertTrue(reads.isEmpty(), "the records were read again under the session's lock");
    }

    @Test
    void aRecordThatCannotBeReadStopsTheSweep() throws Exception {
        leftLoggedIn(true);
        assertThrows(VolumeException.class, () -> repairs().sweepOrphans(() -> {
            throw VolumeException.precondition("a record cannot be read");
        }));
    }

    @Test
    void aFailedLogoutIsReportedAndTheProofKept() throws Exception {
        leftLoggedIn(true);
        commands.expect(iscsiadm.node(PORTAL, "--logout")).fails(8, "iscsiadm: connection timed out\n");
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertEquals(List.of(), swept.removed());
        assertEquals(1, swept.kept().size());
        assertEquals(List.of(PATH), journal.all(), "tried again on the next pass");
    }

    /** Not every pass: once per interval at first, then doubling; reported as kept, with why, all along. */
    @Test
    void aFailedLogoutBacksOffPerTargetAndPortalAndIsStillReported() throws Exception {
        transport = transportEvery(Duration.ofSeconds(10));
        leftLoggedIn(true);
        commands.expect(iscsiadm.node(PORTAL, "--logout")).fails(8, "iscsiadm: connection timed out\n");
        OrphanSweep first = repairs().sweepOrphans(List::of);
        assertTrue(first.kept().get(0).contains("its logout failed: ")
                && first.kept().get(0).endsWith("(not tried again for 10 s)"), first.kept().get(0));

        now.addAndGet(Duration.ofSeconds(9).toNanos());
        OrphanSweep waiting = repairs().sweepOrphans(List::of); // no logout scripted: none may run
        assertEquals(List.of(), waiting.removed());
        assertTrue(waiting.kept().get(0).contains("its logout failed") && waiting.kept().get(0).contains(PATH.toString()),
                waiting.kept().get(0));

        now.addAndGet(Duration.ofSeconds(1).toNanos());
        commands.expect(iscsiadm.node(PORTAL, "--logout")).fails(8, "iscsiadm: connection timed out\n");
        assertTrue(repairs().sweepOrphans(List::of).kept().get(0).contains("(not tried again for 20 s)"));
        now.addAndGet(Duration.ofSeconds(20).toNanos());
        expectLogoutAndDelete();
        assertEquals(List.of("session1 of " + PATH, "node record of " + PATH),
                repairs().sweepOrphans(List::of).removed());
        assertEquals(List.of(), journal.all());
    }

    /** With iscsid down, iscsiadm can report a logout that did not happen: the record is then not deleted either. */
    @Test
    void aLogoutThatLeftTheSessionIsAFailure() throws Exception {
        leftLoggedIn(true);
        commands.expect(iscsiadm.node(PORTAL, "--logout"));
        OrphanSweep swept = repairs().sweepOrphans(List::of);
        assertEquals(List.of(), swept.removed());
        assertTrue(swept.kept().get(0).contains("session1 is still there"), swept.kept().get(0));
        assertEquals(List.of(PATH), journal.all());
    }

    @Test
    void theAttachJournalsItsLoginBeforeTheRecordAndTheFailedLoginsUndoForgetsIt() throws Exception {
        commands.expect(iscsiadm.node(PORTAL, "-o", "new")).andDo(c -> {
            assertEquals(List.of(PATH), journal.all(), "journaled before the node record is made");
            Path record = database.resolve("nodes/" + IQN + "/127.0.0.1,3260");
            Files.createDirectories(record.getParent());
            Files.writeString(record, "node.name = " + IQN + "\n");
        });
        commands.expect(iscsiadm.node(PORTAL, "--login")).fails(8, "iscsiadm: connection timed out\n");
        commands.expect(iscsiadm.node(PORTAL, "-o", "delete"));
        assertThrows(VolumeException.class, () -> transport.attach(request()));
        assertEquals(List.of(), journal.all());
    }
}
