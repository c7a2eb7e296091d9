package dev.blocknode.transport.iscsi;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.GreedyMultipathd;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.testing.ScriptedIscsiadm;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
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
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The iSCSI transport's path repair against a fabricated node and a scripted iscsiadm: LUN 3 of one target staged
 * through two portals (session 1 on host3, session 2 on host4) under multipathd's map mpatha over sdb and sdc. Then
 * session 2 is gone behind the plugin's back (someone ran iscsiadm -u, or it was killed): the kernel deleted sdc
 * with its SCSI host, and the map serves on sdb alone. The node record of the portal is still there, as the stage
 * wrote it.
 */
class IscsiPathRepairUnitTest {

    private static final String IQN = "iqn.2003-01.org.linux-iscsi.array:sn.1234";
    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final String NAA_4 = NAA.replace('d', 'e');
    private static final String WWID_4 = "3" + NAA_4;
    private static final String[] PORTALS = {"127.0.0.1:3260", "127.0.0.2:3260"};

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private ScriptedIscsiadm iscsiadm;
    private Path database;
    private IscsiTransport transport;
    private Attachment staged;
    private int writesAtStage;
    private int commandsAtStage;
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final ManualClock clock = new ManualClock();
    /** The portals' addresses that accept no TCP connection now, and how often each was asked. */
    private final Set<String> silent = new HashSet<>();
    private final Map<String, Integer> probed = new HashMap<>();

    private boolean answers(Portal portal) {
        probed.merge(portal.address(), 1, Integer::sum);
        return !silent.contains(portal.address());
    }

    @BeforeEach
    void stageOnTwoPortalsThenLoseSessionTwo() throws Exception {
        Metrics.addRegistry(registry);
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        database = Files.createDirectories(temp.resolve("etc-iscsi"));
        iscsiadm = new ScriptedIscsiadm(commands, sysfs, database, IQN);
        transport = transportEvery(Duration.ZERO);
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        sysfs.presentLun(new ScsiAddress(4, 0, 0, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA, null);
        for (int i = 0; i < 2; i++) {
            iscsiadm.expectRecordCreated(PORTALS[i]);
            iscsiadm.expectLogin(PORTALS[i], i + 1, i + 3);
        }
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdb").succeeds("ok\n");
        commands.expect("multipathd", "add", "path", "sdc").succeeds("ok\n")
                .andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        staged = transport.attach(volume(3));
        commands.assertAllConsumed();
        writesAtStage = sysfs.writeLog().size();
        commandsAtStage = commands.commandLines().size();
    }

    @AfterEach
    void everyScriptedCommandRan() {
        Metrics.removeRegistry(registry);
        commands.assertAllConsumed();
    }

    private static AttachRequest volume(int lun) {
        return new AttachRequest("vol-" + lun, Map.of("targetPortal", PORTALS[0], "portals", PORTALS[1], "iqn", IQN,
                "lun", Integer.toString(lun)), Map.of(), Secrets.NONE);
    }

    /** What the kernel does when session 2 ends: its host's disks go, and multipathd drops them from their maps. */
    private void sessionTwoGone(String... disks) throws IOException {
        for (String disk : disks) {
            sysfs.removeDisk(disk);
        }
        sysfs.removeIscsiSession(2, 4);
    }

    private List<String> writesSinceStage() {
        List<String> log = sysfs.writeLog();
        return log.subList(writesAtStage, log.size());
    }

    private List<String> commandsSinceStage() {
        List<String> lines = commands.commandLines();
        return lines.subList(commandsAtStage, lines.size());
    }

    private double counted(String kind, String outcome) {
        return registry.get(PathRepairs.NAME).tags("transport", "iscsi", "kind", kind, "outcome", outcome).counter()
                .count();
    }

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

    /**
     * The repair writes the scan journal's entry of each session it may scan the LUN on before it scans: with the
     * journal unwritable (its directory replaced by a file), nothing is scanned.
     */
    @Test
    void noRepairScanIsMadeWhoseJournalEntryCannotBeWritten() throws Exception {
        assertEquals(2, ScanJournal.in(temp.resolve("state")).all("iscsi").size(), "the stage journaled both portals");
        Path journal = temp.resolve("state").resolve(ScanJournal.DIRECTORY);
        try (var entries = Files.list(journal)) {
            for (Path entry : entries.toList()) {
                Files.delete(entry);
            }
        }
        Files.delete(journal);
        Files.writeString(journal, "not a directory");
        sessionTwoGone("sdc");
        sysfs.presentLun(new ScsiAddress(5, 0, 0, 3), "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
        iscsiadm.expectLogin(PORTALS[1], 3, 5);
        assertThrows(dev.blocknode.outcome.VolumeException.class,
                () -> repairs().repair(volume(3), staged, Optional.empty()));
        assertEquals(List.of(), writesSinceStage().stream().filter(w -> w.contains("scan")).toList());
        assertFalse(sysfs.hasDisk("sdd"));
    }

    @Test
    void aSessionLoggedOutBehindThePluginsBackIsLoggedInAgainAndOnlyItsLunScannedCheckedAndAdded() throws Exception {
        assertFalse(repairs().mayRepair(volume(3), staged), "both sessions serve: nothing to hold the volume for");
        sessionTwoGone("sdc");
        assertTrue(repairs().mayRepair(volume(3), staged));
        sysfs.presentLun(new ScsiAddress(5, 0, 0, 3), "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
        iscsiadm.expectLogin(PORTALS[1], 3, 5);
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sdd"));

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals(List.of("5:0:0:3=sdd"), repair.restored());
        assertFalse(repair.failedAny(), repair.toString());
        assertEquals(List.of("class/scsi_host/host5/scan=0 0 3"), writesSinceStage(),
                "exactly the volume's LUN on the new session: no session rescan, nothing on session 1");
        assertEquals("3:0:0:3=sdb,5:0:0:3=sdd", repair.attachment().orElseThrow().get("paths"),
                "the record names the new session's path, and no longer the one of the session that is gone");
        assertTrue(commandsSinceStage().stream().noneMatch(l -> l.contains("--logout") || l.contains("-o delete")),
                commandsSinceStage().toString());
        assertEquals(1, counted("session", "restored"));
        assertEquals(1, counted("lun_path", "restored"));

        Attachment repaired = new Attachment(staged.transport(), staged.device(), staged.number(), staged.identity(),
                repair.attachment().orElseThrow());
        assertFalse(repairs().mayRepair(volume(3), repaired), "both paths in the map again");
        assertEquals(RepairedPaths.NONE, repairs().repair(volume(3), repaired, Optional.empty()));
    }

    @Test
    void aDaemonThatTakesEveryPathGetsTheReturnedPathWithoutTheWwidRegisteredAgain() throws Exception {
        sessionTwoGone("sdc");
        sysfs.presentLun(new ScsiAddress(5, 0, 0, 3), "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
        iscsiadm.expectLogin(PORTALS[1], 3, 5);
        // No "multipath -a": with find_multipaths no/greedy multipathd recorded the WWID when it built the map.
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sdd"));

        RepairedPaths repair = transportWithADaemonThatTakesEveryPath().pathRepair().orElseThrow()
                .repair(volume(3), staged, Optional.empty());

        assertEquals(List.of("5:0:0:3=sdd"), repair.restored());
        assertFalse(repair.failedAny(), repair.toString());
        assertTrue(commandsSinceStage().stream().noneMatch(l -> l.startsWith("multipath -a")),
                commandsSinceStage().toString());
    }

    /** The transport of the stage, built with the repair loop's interval (zero: no loop). */
    private IscsiTransport transportEvery(Duration repairInterval) {
        return IscsiTransport.over(
                new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths())),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, clock.waiter(), () -> true,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .journals(LoginJournal.NONE, ScanJournal.in(temp.resolve("state"))).repairInterval(repairInterval)
                .clock(() -> Duration.between(Instant.EPOCH, clock.instant()).toNanos()).portals(this::answers)
                .build();
    }

    /** The transport of the stage, but over a running multipathd whose find_multipaths is "greedy". */
    private IscsiTransport transportWithADaemonThatTakesEveryPath() {
        return IscsiTransport.over(
                new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths())),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, clock.waiter(), new GreedyMultipathd(),
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .clock(() -> Duration.between(Instant.EPOCH, clock.instant()).toNanos()).build();
    }

    @Test
    void twoVolumesOfTheTargetInOnePassLogInOnce() throws Exception {
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 4), "sde", new DeviceNumber(8, 64), "naa." + NAA_4, null);
        sysfs.presentLun(new ScsiAddress(4, 0, 0, 4), "sdf", new DeviceNumber(8, 80), "naa." + NAA_4, null);
        commands.expect("multipath", "-a", WWID_4);
        commands.expect("multipathd", "add", "path", "sde").succeeds("ok\n");
        commands.expect("multipathd", "add", "path", "sdf").succeeds("ok\n")
                .andDo(c -> sysfs.addMap(1, "mpathb", WWID_4, List.of("sde", "sdf")));
        Attachment second = transport.attach(volume(4));
        writesAtStage = sysfs.writeLog().size();
        sessionTwoGone("sdc", "sdf");
        sysfs.presentLun(new ScsiAddress(5, 0, 0, 3), "sdg", new DeviceNumber(8, 96), "naa." + NAA, null);
        sysfs.presentLun(new ScsiAddress(5, 0, 0, 4), "sdh", new DeviceNumber(8, 112), "naa." + NAA_4, null);
        iscsiadm.expectLogin(PORTALS[1], 3, 5); // once: scripted a single time
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdg").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sdg"));
        commands.expect("multipath", "-a", WWID_4);
        commands.expect("multipathd", "add", "path", "sdh").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-1", "sdh"));

        RepairedPaths first = repairs().repair(volume(3), staged, Optional.empty());
        RepairedPaths then = repairs().repair(volume(4), second, Optional.empty());

        assertEquals(List.of("5:0:0:3=sdg"), first.restored());
        assertEquals(List.of("5:0:0:4=sdh"), then.restored(), "the second volume finds the session the first made");
        assertEquals(List.of("class/scsi_host/host5/scan=0 0 3", "class/scsi_host/host5/scan=0 0 4"),
                writesSinceStage());
    }

    @Test
    void aSessionIscsidIsRecoveringIsReportedAndNeverTouched() throws Exception {
        sysfs.setIscsiSessionState(2, "FAILED");
        sysfs.setState("sdc", "transport-offline");
        assertTrue(repairs().mayRepair(volume(3), staged), "held, so that the repair says it waits");

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals("iSCSI session(s) at 127.0.0.2:3260 (session2 FAILED) are left to iscsid's own recovery"
                + " (replacement_timeout); the repair never logs a session out", repair.waiting().orElseThrow());
        assertFalse(repair.actedOn());
        assertEquals(List.of(), commandsSinceStage(), "no iscsiadm, no multipath");
        assertEquals(List.of(), writesSinceStage());
        assertTrue(sysfs.hasDisk("sdc"), "the recovering session's disk stays under the map");
    }

    /** Seen in the VM tier: a pass that met session 2 mid-logout failed on the address "4:0:-1:3" and backed off. */
    @Test
    void aSessionBeingLoggedOutIsLeftForTheNextPassNotScannedAtTargetMinusOne() throws Exception {
        sysfs.removeDisk("sdc");
        sysfs.iscsiSessionTearingDown(2, 4);

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals("iSCSI session(s) at 127.0.0.2:3260 (session2 LOGGED_IN, being torn down) are left to iscsid's"
                + " own recovery (replacement_timeout); the repair never logs a session out",
                repair.waiting().orElseThrow());
        assertEquals(List.of(), commandsSinceStage(), "no iscsiadm, no multipath");
        assertEquals(List.of(), writesSinceStage(), "nothing scanned");
    }

    @Test
    void withNoPathServingAndEverySessionStillThereNothingIsLoggedInOrScanned() throws Exception {
        for (int session = 1; session <= 2; session++) {
            sysfs.setIscsiSessionState(session, "FAILED");
        }
        sysfs.setState("sdb", "transport-offline");
        sysfs.setState("sdc", "transport-offline");

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());

        assertTrue(repair.waiting().orElseThrow().startsWith("no path of its multipath map serves I/O"),
                repair.toString());
        assertEquals(List.of(), commandsSinceStage());
        assertEquals(List.of(), writesSinceStage());
        assertTrue(sysfs.hasDisk("sdb"));
        assertTrue(sysfs.hasDisk("sdc"));
    }

    /** Both sessions gone behind the plugin's back: the map, held open by the mount, has no path left. */
    private void everySessionGone() throws IOException {
        sessionTwoGone("sdc");
        sysfs.removeDisk("sdb");
        sysfs.removeIscsiSession(1, 3);
    }

    @Test
    void everySessionGoneBothPortalsAreLoggedInAgainAndTheLunScannedCheckedAndAddedOnEach() throws Exception {
        everySessionGone();
        assertTrue(repairs().mayRepair(volume(3), staged));
        bothPortalsLogInAndTheLunJoinsTheMap();

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals(Optional.empty(), repair.waiting(),
                "no path serving is no reason to wait when no session is left");
        assertEquals(List.of("6:0:0:3=sdd", "7:0:0:3=sde"), repair.restored());
        assertFalse(repair.failedAny(), repair.toString());
        assertEquals(List.of("class/scsi_host/host6/scan=0 0 3", "class/scsi_host/host7/scan=0 0 3"),
                writesSinceStage(), "exactly the volume's LUN on each new session");
        assertEquals("6:0:0:3=sdd,7:0:0:3=sde", repair.attachment().orElseThrow().get("paths"));
        assertTrue(commandsSinceStage().stream().noneMatch(l -> l.contains("--logout") || l.contains("-o delete")),
                commandsSinceStage().toString());
        assertEquals(2, counted("session", "restored"));
        assertEquals(2, counted("lun_path", "restored"));
    }

    @Test
    void withEveryPathDownAGoneSessionIsLoggedInAgainAndTheRecoveringOneLeftAlone() throws Exception {
        sessionTwoGone("sdc");
        sysfs.setIscsiSessionState(1, "FAILED");
        sysfs.setState("sdb", "transport-offline");
        sysfs.presentLun(new ScsiAddress(5, 0, 0, 3), "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
        iscsiadm.expectLogin(PORTALS[1], 3, 5);
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sdd"));

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals(List.of("5:0:0:3=sdd"), repair.restored(), repair.toString());
        assertEquals(List.of("class/scsi_host/host5/scan=0 0 3"), writesSinceStage(), "nothing on session 1");
        assertTrue(sysfs.hasDisk("sdb"), "the recovering session's disk stays under the map");
        assertTrue(commandsSinceStage().stream().noneMatch(l -> l.contains("--logout") || l.contains("-o delete")),
                commandsSinceStage().toString());
    }

    @Test
    void everySessionGoneADiskOfAnotherLunOnANewSessionIsRefusedTakenOffAndReported() throws Exception {
        everySessionGone();
        // The array put LUN 4's disk at number 3 behind portal 1's new session; portal 2 shows the right one.
        sysfs.presentLun(new ScsiAddress(6, 0, 0, 3), "sdd", new DeviceNumber(8, 48), "naa." + NAA_4, null);
        sysfs.presentLun(new ScsiAddress(7, 0, 0, 3), "sde", new DeviceNumber(8, 64), "naa." + NAA, null);
        iscsiadm.expectLogin(PORTALS[0], 3, 6);
        iscsiadm.expectLogin(PORTALS[1], 4, 7);
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sde").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sde"));

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals(List.of("6:0:0:3=sdd is LUN " + WWID_4 + ", not " + WWID), repair.wrongLun());
        assertEquals(List.of("7:0:0:3=sde"), repair.restored(), "only the disk of the staged LUN joins the map");
        assertFalse(sysfs.hasDisk("sdd"), "the other LUN's disk, which nothing holds, is taken off again");
        assertEquals("7:0:0:3=sde", repair.attachment().orElseThrow().get("paths"));
        assertEquals(1, counted("lun_path", "wrong_lun"));
    }

    @Test
    void everySessionGoneARefusedLoginBacksOffPerPortalDoublingAndIsTriedAgainOnceDue() throws Exception {
        everySessionGone();
        for (String portal : PORTALS) {
            commands.expect(iscsiadm.node(portal, "--login")).fails(24, "iscsiadm: initiator reported error (24 -"
                    + " iSCSI login failed due to authorization failure)");
        }

        RepairedPaths refused = repairs().repair(volume(3), staged, Optional.empty());
        clock.advance(Duration.ofSeconds(10));
        RepairedPaths soon = repairs().repair(volume(3), staged, Optional.empty()); // no login scripted: none may run

        assertEquals(2, refused.failed().size(), refused.toString());
        assertTrue(refused.failed().stream().allMatch(f -> f.endsWith("(not tried again for 30 s)")),
                refused.toString());
        assertEquals(refused.failed(), soon.failed());
        assertEquals(List.of(), writesSinceStage(), "no session, nothing scanned");

        clock.advance(Duration.ofSeconds(21));
        for (String portal : PORTALS) {
            commands.expect(iscsiadm.node(portal, "--login")).fails(24, "iscsiadm: login failed");
        }
        RepairedPaths again = repairs().repair(volume(3), staged, Optional.empty());
        assertTrue(again.failed().stream().allMatch(f -> f.endsWith("(not tried again for 60 s)")), again.toString());

        clock.advance(Duration.ofSeconds(61));
        bothPortalsLogInAndTheLunJoinsTheMap();
        RepairedPaths due = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals(List.of("6:0:0:3=sdd", "7:0:0:3=sde"), due.restored(), due.toString());
        assertEquals(4, counted("session", "failed"), "two portals refused twice; the waits in between tried nothing");
        assertEquals(2, counted("session", "restored"));
    }

    /** As NVMe/TCP's connects: with a repair interval shorter than 30 s, the next pass tries the login again. */
    @Test
    void aRefusedLoginWaitsNoLongerThanTheRepairIntervalAtFirst() throws Exception {
        transport = transportEvery(Duration.ofSeconds(10));
        sessionTwoGone("sdc");
        commands.expect(iscsiadm.node(PORTALS[1], "--login")).fails(8, "iscsiadm: connection login retries"
                + " (reopen_max) 5 exceeded");

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());
        clock.advance(Duration.ofSeconds(9));
        // no second login scripted: none may run
        RepairedPaths soon = repairs().repair(volume(3), staged, Optional.empty());

        assertTrue(repair.failed().get(0).endsWith("(not tried again for 10 s)"), repair.failed().get(0));
        assertEquals(repair.failed(), soon.failed());
        clock.advance(Duration.ofSeconds(1));
        assertTrue(repairs().mayRepair(volume(3), staged), "due on the next pass");
    }

    @Test
    void aRefusedLoginIsNotTriedAgainForAWhileWhicheverVolumeAsks() throws Exception {
        sessionTwoGone("sdc");
        commands.expect(iscsiadm.node(PORTALS[1], "--login")).fails(8, "iscsiadm: connection login retries"
                + " (reopen_max) 5 exceeded");

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());
        // no second login scripted: none may run
        RepairedPaths again = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals(1, repair.failed().size(), repair.toString());
        assertTrue(repair.failed().get(0).startsWith("127.0.0.2:3260: the login failed"), repair.failed().get(0));
        assertTrue(repair.failed().get(0).endsWith("(not tried again for 30 s)"), repair.failed().get(0));
        assertEquals(repair.failed(), again.failed());
        assertEquals(1, counted("session", "failed"), "one login tried, one failure counted");
        assertEquals(List.of(), writesSinceStage(), "nothing scanned on session 1, whose path is in the map");
    }

    /**
     * A portal down for longer than the login back-offs would grow: no login runs while it accepts no connection, the
     * volume only waits (nothing counted failed, so the loop does not set it aside), and the first repair after it
     * answers again logs in, at whatever point the back-offs would have reached.
     */
    @Test
    void aPortalThatAcceptsNoConnectionIsWaitedForWithoutALoginAndLoggedInOnceItAnswers() throws Exception {
        transport = transportEvery(Duration.ofSeconds(10));
        sessionTwoGone("sdc");
        silent.add("127.0.0.2");

        for (int pass = 0; pass < 30; pass++) { // five minutes of passes: no iscsiadm scripted, none may run
            RepairedPaths waits = repairs().repair(volume(3), staged, Optional.empty());
            assertEquals(Optional.of("the portal(s) 127.0.0.2:3260 accept no TCP connection (within 2 s): logged in"
                    + " again once they do"), waits.waiting(), waits.toString());
            assertFalse(waits.failedAny(), "an outage is waited for, not a failed repair the loop backs off from");
            // as another volume of the target would in the same pass
            repairs().repair(volume(3), staged, Optional.empty());
            clock.advance(Duration.ofSeconds(10));
        }
        assertEquals(30, probed.get("127.0.0.2"), "one connect per pass (half an interval), whichever volume asks");
        assertEquals(List.of(), commandsSinceStage());
        assertEquals(0, counted("session", "failed"));

        silent.clear();
        iscsiadm.expectLogin(PORTALS[1], 3, 6);
        sysfs.presentLun(new ScsiAddress(6, 0, 0, 3), "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sdd"));
        RepairedPaths back = repairs().repair(volume(3), staged, Optional.empty());

        assertEquals(List.of("6:0:0:3=sdd"), back.restored(), back.toString());
    }

    @Test
    void aPortalWhoseNodeRecordIsGoneIsNotLoggedInWithARecordMadeUp() throws Exception {
        sessionTwoGone("sdc");
        Files.delete(database.resolve("nodes/" + IQN + "/127.0.0.2,3260"));

        RepairedPaths repair = repairs().repair(volume(3), staged, Optional.empty());

        assertTrue(repair.failed().get(0).startsWith("127.0.0.2:3260: no node record to log in with"),
                repair.toString());
        assertEquals(List.of(), commandsSinceStage());
    }

    /** The LUN behind both portals' new sessions (hosts 6 and 7), each disk added to the map by multipathd. */
    private void bothPortalsLogInAndTheLunJoinsTheMap() throws Exception {
        sysfs.presentLun(new ScsiAddress(6, 0, 0, 3), "sdd", new DeviceNumber(8, 48), "naa." + NAA, null);
        sysfs.presentLun(new ScsiAddress(7, 0, 0, 3), "sde", new DeviceNumber(8, 64), "naa." + NAA, null);
        iscsiadm.expectLogin(PORTALS[0], 3, 6);
        iscsiadm.expectLogin(PORTALS[1], 4, 7);
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdd").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sdd"));
        commands.expect("multipathd", "add", "path", "sde").succeeds("ok\n").andDo(c -> sysfs.addSlave("dm-0", "sde"));
    }
}
