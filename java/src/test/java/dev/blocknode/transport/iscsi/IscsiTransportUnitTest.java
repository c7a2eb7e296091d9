package dev.blocknode.transport.iscsi;

import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
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
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.san.LunAttacher;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The iSCSI transport against a fabricated node and a scripted iscsiadm: target IQN on two portals,
 * LUN 3 behind both. Logins create sessions in the fake sysfs as the kernel would.
 */
class IscsiTransportUnitTest {

    private static final String IQN = "iqn.2003-01.org.linux-iscsi.array:sn.1234";
    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final String[] PORTALS = {"127.0.0.1:3260", "127.0.0.2:3260"};

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private Path database;
    private ManualClock clock;
    private IscsiTransport transport;
    private ScriptedIscsiadm iscsiadm;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        database = Files.createDirectories(temp.resolve("etc-iscsi"));
        iscsiadm = new ScriptedIscsiadm(commands, sysfs, database, IQN);
        clock = new ManualClock();
        transport = new IscsiTransport(
                new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths())),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, clock.waiter(), () -> false,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)));
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    private static AttachRequest request(Secrets secrets, String... extra) {
        Map<String, String> context = new HashMap<>(Map.of("targetPortal", PORTALS[0], "portals", PORTALS[1],
                "iqn", IQN, "lun", "3"));
        for (int i = 0; i < extra.length; i += 2) {
            context.put(extra[i], extra[i + 1]);
        }
        return new AttachRequest("vol-iscsi", context, Map.of(), secrets);
    }

    private String[] node(String portal, String... operation) {
        return iscsiadm.node(portal, operation);
    }

    /** Both portals' node records made and logged in, the first as session 1 on host 3, the second 2 on 4. */
    private void expectBothPortalsLoggedIn() {
        for (int i = 0; i < 2; i++) {
            expectRecordCreated(PORTALS[i]);
            expectLogin(PORTALS[i], i + 1, i + 3);
        }
    }

    private void expectRecordCreated(String portal) {
        iscsiadm.expectRecordCreated(portal);
    }

    private void expectLogin(String portal, int session, int host) {
        iscsiadm.expectLogin(portal, session, host);
    }

    private void lunBehindBothSessions() {
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        sysfs.presentLun(new ScsiAddress(4, 0, 0, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA, null);
    }

    private void expectMap() {
        commands.expect("multipath", "-a", WWID).succeeds("wwid '" + WWID + "' added\n");
        commands.expect("multipath", WWID).andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
    }

    /** A running daemon whose find_multipaths is {@code takesEveryPath ? "greedy" : "strict"}. */
    private IscsiTransport withDaemon(boolean takesEveryPath) {
        MultipathDaemon daemon = new MultipathDaemon() {
            @Override
            public boolean isRunning() {
                return true;
            }

            @Override
            public boolean takesEveryPath() {
                return takesEveryPath;
            }
        };
        return new IscsiTransport(
                new Host(sysfs.paths(), commands, new QueryOnlyMounter(), new RecordingBlockDevices(sysfs.paths())),
                new IscsiAdm(commands), new NodeRecordFiles(database), sysfs, clock.waiter(), daemon,
                new LunAttacher.Timeouts(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofSeconds(60)));
    }

    @Test
    void aDaemonThatTakesEveryPathIsNotAskedToRegisterTheWwid() throws Exception {
        lunBehindBothSessions();
        expectBothPortalsLoggedIn();
        // No "multipath -a": multipathd with find_multipaths no/greedy builds the map and records the WWID itself.
        commands.expect("multipathd", "add", "path", "sdb").succeeds("ok\n");
        commands.expect("multipathd", "add", "path", "sdc").succeeds("ok\n")
                .andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        assertEquals(WWID, withDaemon(true).attach(request(Secrets.NONE)).identity());
    }

    @Test
    void aDaemonThatNeedsTheWwidsFileIsAskedToRegisterIt() throws Exception {
        lunBehindBothSessions();
        expectBothPortalsLoggedIn();
        commands.expect("multipath", "-a", WWID).succeeds("wwid '" + WWID + "' added\n");
        commands.expect("multipathd", "add", "path", "sdb").succeeds("ok\n");
        commands.expect("multipathd", "add", "path", "sdc").succeeds("ok\n")
                .andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")));
        assertEquals(WWID, withDaemon(false).attach(request(Secrets.NONE)).identity());
    }

    @Test
    void theStageLooksForItsMapThroughItsPathsWithoutReadingTheOtherMaps() throws Exception {
        lunBehindBothSessions();
        unreadableMapOfAnotherVolume();
        expectBothPortalsLoggedIn();
        expectMap();
        assertEquals(sysfs.paths().dev().resolve("dm-0"), transport.attach(request(Secrets.NONE)).device());
    }

    /** Another volume's map that cannot be read: a stage or release that reads every map of the node fails on it. */
    private void unreadableMapOfAnotherVolume() throws IOException {
        Path other = sysfs.addDm(7, "other", "mpath-3600a0b80000000000000000000000007", List.of());
        Files.delete(other.resolve("dm/uuid"));
        Files.createDirectories(other.resolve("dm/uuid"));
    }

    @Test
    void theReleaseFindsTheMapThroughItsRecordWithoutReadingTheOtherMaps() throws Exception {
        lunBehindBothSessions();
        expectBothPortalsLoggedIn();
        expectMap();
        Attachment attachment = transport.attach(request(Secrets.NONE));
        unreadableMapOfAnotherVolume();

        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);
        transport.detach(attachment);
        assertFalse(sysfs.hasDisk("sdb") || sysfs.hasDisk("sdc"));
    }

    @Test
    void logsInOncePerPortalScansOnlyItsLunAndTakesTheMap() throws Exception {
        lunBehindBothSessions();
        expectBothPortalsLoggedIn();
        expectMap();

        Attachment attachment = transport.attach(request(Secrets.NONE));

        assertEquals(List.of("class/scsi_host/host3/scan=0 0 3", "class/scsi_host/host4/scan=0 0 3"),
                sysfs.writeLog(), "one targeted scan per session, nothing else");
        assertEquals(sysfs.paths().dev().resolve("dm-0"), attachment.device());
        assertEquals(WWID, attachment.identity());
        assertEquals(IQN, attachment.details().get("iqn"));
        assertEquals("127.0.0.1:3260,127.0.0.2:3260", attachment.details().get("portals"));
        assertEquals("3:0:0:3=sdb,4:0:0:3=sdc", attachment.details().get("paths"));
        for (String portal : PORTALS) {
            assertEquals(Optional.of("None"), setting(portal, ChapCredentials.AUTH_METHOD));
            assertEquals(Optional.of("15"), setting(portal, ReplacementTimeout.SETTING),
                    "two portals, a multipath map: a dead portal fails over after 15 s, not iscsid.conf's 120");
            for (String manual : List.of("node.startup", "node.conn[0].startup", "node.session.scan")) {
                assertEquals(Optional.of("manual"), setting(portal, manual),
                        "written with the login's other settings, not by iscsiadm -o update");
            }
        }

        // A second LUN of the same target reuses both sessions: no iscsiadm call at all.
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 4), "sdd", new DeviceNumber(8, 48), "naa." + NAA.replace('d', 'e'),
                null);
        sysfs.presentLun(new ScsiAddress(4, 0, 0, 4), "sde", new DeviceNumber(8, 64), "naa." + NAA.replace('d', 'e'),
                null);
        String otherWwid = "3" + NAA.replace('d', 'e');
        commands.expect("multipath", "-a", otherWwid).succeeds("");
        commands.expect("multipath", otherWwid).andDo(c -> sysfs.addMap(1, "mpathb", otherWwid, List.of("sdd", "sde")));
        Attachment second = transport.attach(request(Secrets.NONE, "lun", "4"));
        assertEquals(otherWwid, second.identity());

        // Releasing the first LUN keeps both sessions: the second LUN still uses them.
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        transport.detach(attachment);
        assertFalse(sysfs.hasDisk("sdb") || sysfs.hasDisk("sdc"), "the first LUN's paths are deleted");
        assertTrue(sysfs.hasDisk("sdd") && sysfs.hasDisk("sde"), "the second LUN's paths are untouched");

        // Releasing the last LUN logs out of both sessions and deletes the records.
        commands.expect("dmsetup", "message", "mpathb", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpathb").andDo(c -> sysfs.removeMap("dm-1"));
        iscsiadm.expectLogoutOfBoth(PORTALS);
        transport.detach(second);
    }

    @Test
    void growingRescansEveryPathThenResizesTheMap() throws Exception {
        lunBehindBothSessions();
        expectBothPortalsLoggedIn();
        expectMap();
        Attachment attachment = transport.attach(request(Secrets.NONE));
        int before = sysfs.writeLog().size();

        commands.expect("multipathd", "resize", "map", "mpatha").succeeds("ok\n");
        transport.refreshSize(attachment);

        List<String> writes = sysfs.writeLog().subList(before, sysfs.writeLog().size());
        assertEquals(2, writes.size(), writes.toString());
        assertTrue(writes.stream().allMatch(w -> w.endsWith("device/rescan=1")), writes.toString());
        assertTrue(writes.get(0).contains("sdb") && writes.get(1).contains("sdc"), writes.toString());
    }

    @Test
    void chapSecretsGoIntoTheRecordFileAndNeverIntoArgv() throws Exception {
        lunBehindBothSessions();
        Secrets chap = new Secrets(Map.of(ChapCredentials.USERNAME, "initiator-user",
                ChapCredentials.PASSWORD, "very-secret-pw"));
        expectBothPortalsLoggedIn();
        expectMap();

        transport.attach(request(chap));

        for (var command : commands.calls()) {
            assertFalse(String.join(" ", command.argv()).contains("very-secret-pw"), command.display());
            assertFalse(new String(command.stdin()).contains("very-secret-pw"));
        }
        NodeRecordFiles records = new NodeRecordFiles(database);
        IscsiPath first = new IscsiPath(IQN, Portal.parse(PORTALS[0]), "default");
        assertEquals(java.util.Optional.of("very-secret-pw"), records.readSetting(first, ChapCredentials.PASSWORD));
        assertEquals(java.util.Optional.of("CHAP"), records.readSetting(first, "node.session.auth.authmethod"));
    }

    @Test
    void authenticationFailureOnEveryPortalIsFailedPrecondition() {
        for (String portal : PORTALS) {
            expectRecordCreated(portal);
            commands.expect(node(portal, "--login")).fails(24, "iscsiadm: Login failed: authorization failure");
        }
        for (String portal : PORTALS) {
            commands.expect(node(portal, "-o", "delete")); // no record with a wrong password stays behind
        }
        Secrets chap = new Secrets(Map.of(ChapCredentials.USERNAME, "u", ChapCredentials.PASSWORD, "wrong"));
        VolumeException e = assertThrows(VolumeException.class, () -> transport.attach(request(chap)));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("CHAP authentication"), e.getMessage());
        assertFalse(e.getMessage().contains("wrong"), "no secret in the message");
    }

    @Test
    void onePortalDownStillAttachesThroughTheOther() throws Exception {
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        expectRecordCreated(PORTALS[0]);
        expectLogin(PORTALS[0], 1, 3);
        expectRecordCreated(PORTALS[1]);
        commands.expect(node(PORTALS[1], "--login")).fails(8, "iscsiadm: connection timed out");

        Attachment attachment = transport.attach(request(Secrets.NONE));
        assertEquals("3:0:0:3=sdb", attachment.details().get("paths"));
        assertEquals(sysfs.paths().dev().resolve("sdb"), attachment.device(), "one path, no multipathd: the disk");
        // The portal that was down keeps its node record and journal entry: the repair loop logs it in with them.
        assertTrue(Files.exists(database.resolve("nodes/" + IQN + "/" + PORTALS[1].replace(':', ','))),
                "the down portal's node record is kept");
    }

    /** A portal that refused the credentials keeps nothing, even when the other one attached: its record may be wrong. */
    @Test
    void aPortalThatRefusedTheCredentialsLosesItsRecordThoughTheOtherAttached() throws Exception {
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        expectRecordCreated(PORTALS[0]);
        expectLogin(PORTALS[0], 1, 3);
        expectRecordCreated(PORTALS[1]);
        commands.expect(node(PORTALS[1], "--login")).fails(24, "iscsiadm: initiator reported error (24 - iSCSI login"
                + " failed due to authorization failure)");
        commands.expect(node(PORTALS[1], "-o", "delete"));

        assertEquals("3:0:0:3=sdb", transport.attach(request(Secrets.NONE)).details().get("paths"));
    }

    @Test
    void aLunWithTheWrongWwidIsRefused() {
        lunBehindBothSessions();
        expectBothPortalsLoggedIn();
        iscsiadm.expectLogoutOfBoth(PORTALS);
        VolumeException e = assertThrows(VolumeException.class,
                () -> transport.attach(request(Secrets.NONE, "wwid", "36001405aaaaaaaaaaaaaaaaaaaaaaaaa")));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome(), e.getMessage());
        assertFalse(sysfs.hasDisk("sdb") || sysfs.hasDisk("sdc"), "the refused LUN's disks are deleted");
    }

    /**
     * LUN 3 was deleted on the array and another LUN mapped at number 3 while the sessions stayed up (LUN 4 uses
     * them): the disks left of the old LUN 3 still name it. A stage of the old LUN is refused, the stale disks
     * are gone and so is what its scan brought in; the sessions stay for LUN 4.
     */
    @Test
    void aStaleDiskOfADeletedLunOnASharedSessionIsReplacedAndNeverTakenForIt() throws Exception {
        String otherWwid = "3" + NAA.replace('d', 'e');
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 4), "sdd", new DeviceNumber(8, 48), "naa." + otherWwid.substring(1), null);
        sysfs.presentLun(new ScsiAddress(4, 0, 0, 4), "sde", new DeviceNumber(8, 64), "naa." + otherWwid.substring(1), null);
        expectBothPortalsLoggedIn();
        commands.expect("multipath", "-a", otherWwid).succeeds("");
        commands.expect("multipath", otherWwid).andDo(c -> sysfs.addMap(1, "mpathb", otherWwid, List.of("sdd", "sde")));
        transport.attach(request(Secrets.NONE, "lun", "4"));
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        String reusedNaa = "60014050fc0e2e000090000000000000";
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdf", new DeviceNumber(8, 80), "naa." + reusedNaa, null);
        sysfs.presentLun(new ScsiAddress(4, 0, 0, 3), "sdg", new DeviceNumber(8, 96), "naa." + reusedNaa, null);
        int writes = sysfs.writes().size();

        VolumeException e = assertThrows(VolumeException.class, () -> transport.attach(request(Secrets.NONE, "wwid", WWID)));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome(), e.getMessage());
        assertTrue(e.getMessage().contains("is LUN 3" + reusedNaa), e.getMessage());
        List<String> log = sysfs.writeLog();
        assertEquals(List.of("class/block/sdb/device/rescan=1", "class/block/sdb/device/delete=1",
                "class/scsi_host/host3/scan=0 0 3", "class/block/sdc/device/rescan=1", "class/block/sdc/device/delete=1",
                "class/scsi_host/host4/scan=0 0 3", "class/block/sdf/device/delete=1", "class/block/sdg/device/delete=1"),
                log.subList(writes, log.size()));
        assertEquals(List.of("sdd", "sde"), sysfs.diskNames(), "only LUN 4's disks are left; both sessions stay");
    }

    /** The plugin died after the attach (the record still said ATTACHING): unstage asks to abandon it. */
    @Test
    void abandoningAnAttachCutShortRemovesTheLunAndLogsOut() throws Exception {
        lunBehindBothSessions();
        expectBothPortalsLoggedIn();
        expectMap();
        transport.attach(request(Secrets.NONE));

        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);
        transport.abandon(request(Secrets.NONE));
        assertFalse(sysfs.hasDisk("sdb") || sysfs.hasDisk("sdc"), "the LUN's disks are deleted");
    }

    /** Died before the first login: nothing to log out of; records a cut-short login may have written go. */
    @Test
    void abandoningAnAttachThatNeverLoggedInOnlyForgetsTheRecords() throws Exception {
        iscsiadm.recordExists(PORTALS[0]); // written before the crash; portal 2's record was never made
        iscsiadm.expectRecordDeleted(PORTALS[0]);
        transport.abandon(request(Secrets.NONE));
        assertEquals(List.of(), sysfs.writeLog(), "nothing scanned or deleted");
    }

    @Test
    void aRecordThatIsAlreadyGoneCostsNoIscsiadmRun() throws Exception {
        // In a drain the volumes of one target unstage at once: the last to release a session logs it out and
        // deletes its record, and the others find neither session nor record.
        Attachment attachment = attachedThroughBothPortals(Secrets.NONE);
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);
        transport.detach(attachment);
        commands.assertAllConsumed();
        List<String> before = commands.commandLines();
        transport.detach(attachment); // kubelet's retry, or a second volume of the same sessions
        assertEquals(before, commands.commandLines(), "no command for sessions and records that are gone");
    }

    // ---- injected faults ---------------------------------------------------------------------------

    @Test
    void pathHealthReadsTheMapOfTheRecordedAttachment() throws Exception {
        Attachment attachment = attachedThroughBothPortals(Secrets.NONE);
        assertEquals(2, transport.pathHealth(attachment).orElseThrow().serving());
        sysfs.setState("sdc", "transport-offline");
        PathReport degraded = transport.pathHealth(attachment).orElseThrow();
        assertEquals(List.of("sdc is transport-offline"), degraded.failures());
        assertTrue(degraded.problem().orElseThrow().startsWith("multipath map mpatha serves on 1 path(s)"),
                degraded.problem().orElseThrow());
    }

    private Attachment attachedThroughBothPortals(Secrets secrets) throws Exception {
        lunBehindBothSessions();
        expectBothPortalsLoggedIn();
        expectMap();
        Attachment attachment = transport.attach(request(secrets));
        commands.assertAllConsumed();
        return attachment;
    }


    @Test
    void aHangingLoginTimesOutNamingCommandAndPortalWithoutTheSecretAndARetryWorks() throws Exception {
        lunBehindBothSessions();
        Secrets chap = new Secrets(Map.of(ChapCredentials.USERNAME, "user", ChapCredentials.PASSWORD, "hang-secret-pw"));
        for (String portal : PORTALS) {
            expectRecordCreated(portal);
            commands.expect(node(portal, "--login")).timesOut();
        }
        for (String portal : PORTALS) {
            commands.expect(node(portal, "-o", "delete")); // no record, with its password, stays behind
        }

        VolumeException e = assertThrows(VolumeException.class, () -> transport.attach(request(chap)));

        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome(), e.getMessage());
        for (String portal : PORTALS) {
            assertTrue(e.getMessage().contains(String.join(" ", node(portal, "--login")) + " timed out after 75000 ms"),
                    e.getMessage());
        }
        assertFalse(e.getMessage().contains("hang-secret-pw"), e.getMessage());
        assertTrue(commands.calls().stream().filter(c -> c.argv().contains("--login"))
                .allMatch(c -> c.timeout().equals(Duration.ofSeconds(75))), "every login runs under its time limit");
        assertEquals(List.of(), sysfs.diskNames(), "nothing was scanned");

        // The target answers again: kubelet's retry attaches.
        expectBothPortalsLoggedIn();
        expectMap();
        assertEquals(sysfs.paths().dev().resolve("dm-0"), transport.attach(request(chap)).device());
    }

    @Test
    void aHangingLogoutFailsTheDetachNamingThePortalAndTheRetryFinishes() throws Exception {
        Attachment attachment = attachedThroughBothPortals(Secrets.NONE);
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        commands.expect(node(PORTALS[0], "--logout")).timesOut();
        commands.expect(node(PORTALS[1], "--logout")).andDo(c -> sysfs.removeIscsiSession(2, 4));
        commands.expect(node(PORTALS[1], "-o", "delete"));

        VolumeException e = assertThrows(VolumeException.class, () -> transport.detach(attachment));

        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("logging out failed"), e.getMessage());
        assertTrue(e.getMessage().contains(String.join(" ", node(PORTALS[0], "--logout")) + " timed out"),
                e.getMessage());
        assertEquals(List.of(), sysfs.diskNames(), "the LUN itself is released");

        commands.expect(node(PORTALS[0], "--logout")).andDo(c -> sysfs.removeIscsiSession(1, 3));
        commands.expect(node(PORTALS[0], "-o", "delete"));
        commands.expect(node(PORTALS[1], "-o", "delete")); // already logged out: only the record (idempotent)
        transport.detach(attachment);
        assertFalse(Files.exists(sysfs.sys().resolve("class/iscsi_session/session1")));
    }

    @Test
    void aLogoutIscsiadmReportsButThatLeavesTheSessionFailsTheDetachAndKeepsTheRecord() throws Exception {
        // Measured in the VM tier: with iscsid down, iscsiadm --logout exits 0 and the session stays.
        Attachment attachment = attachedThroughBothPortals(Secrets.NONE);
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        commands.expect(node(PORTALS[0], "--logout"));
        commands.expect(node(PORTALS[1], "--logout")).andDo(c -> sysfs.removeIscsiSession(2, 4));
        commands.expect(node(PORTALS[1], "-o", "delete"));

        VolumeException e = assertThrows(VolumeException.class, () -> transport.detach(attachment));

        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("is iscsid running?"), e.getMessage());
        assertTrue(Files.exists(sysfs.sys().resolve("class/iscsi_session/session1")));
        commands.assertAllConsumed(); // portal 1's record was not deleted under its session
    }

    /**
     * A staging record is read back as untrusted: an IQN in its details that is not an iSCSI name (here one that
     * climbs out of open-iscsi's database to what looks like a node record) is refused, and nothing of it reaches
     * iscsiadm; the LUN itself is released as recorded.
     */
    @Test
    void aRecordedTargetThatIsNotAnIscsiNameIsNeverLoggedOutOrDeleted() throws Exception {
        Attachment attachment = attachedThroughBothPortals(Secrets.NONE);
        Path bait = Files.createDirectories(temp.resolve("outside")).resolve("127.0.0.1,3260");
        Files.writeString(bait, "node.name = bait\n");
        Map<String, String> forged = new HashMap<>(attachment.details());
        forged.put(IscsiTransport.DETAIL_IQN, IQN + "/../../../outside");
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));

        VolumeException e = assertThrows(VolumeException.class, () -> transport.detach(new Attachment(
                attachment.transport(), attachment.device(), attachment.number(), attachment.identity(), forged)));

        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("is not an iSCSI name"), e.getMessage());
        assertTrue(Files.exists(bait));
        assertTrue(commands.commandLines().stream().noneMatch(c -> c.contains("iscsiadm") && c.contains("outside")),
                commands.commandLines().toString());
    }

    @Test
    void aMapInUseKeepsPathsAndSessionsAndNamesTheHolder() throws Exception {
        Attachment attachment = attachedThroughBothPortals(Secrets.NONE);
        sysfs.addDm(5, "vg0-data", "LVM-held", List.of("dm-0"));
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").fails(1, "mpatha: map in use").anyTimes();

        VolumeException e = assertThrows(VolumeException.class, () -> transport.detach(attachment));

        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("in use by dm-5 (vg0-data)"), e.getMessage());
        assertTrue(e.getMessage().contains("multipath -f said: mpatha: map in use"), e.getMessage());
        assertEquals(Duration.ofSeconds(60), clock.elapsed(), "retried for the release bound, then gave up");
        assertEquals(List.of("sdb", "sdc"), sysfs.diskNames(), "no path deleted from under the map");
        assertTrue(commands.commandLines().stream().noneMatch(c -> c.contains("--logout")),
                "no session logged out under a live map");

        sysfs.removeMap("dm-5"); // the holder goes; kubelet retries
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);
        transport.detach(attachment);
        assertEquals(List.of(), sysfs.diskNames());
    }

    @Test
    void aPathDeleteAnsweringBusyIsRetriedUntilItGoes() throws Exception {
        Attachment attachment = attachedThroughBothPortals(Secrets.NONE);
        sysfs.failWrites(sysfs.sys().resolve("class/block/sdb/device/delete"), 3, "Device or resource busy");
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        iscsiadm.expectLogoutOfBoth(PORTALS);

        transport.detach(attachment);

        assertEquals(3, sysfs.failedWrites().size());
        assertEquals(List.of(), sysfs.diskNames());
        assertTrue(clock.elapsed().compareTo(Duration.ZERO) > 0 && clock.elapsed().compareTo(Duration.ofSeconds(5)) < 0,
                "retried at once, not after the bound: " + clock.elapsed());
    }

    @Test
    void aPathDeleteThatStaysBusyGivesUpAfterTheBoundNamingTheDevice() throws Exception {
        Attachment attachment = attachedThroughBothPortals(Secrets.NONE);
        sysfs.failWrites(sysfs.sys().resolve("class/block/sdb/device/delete"), Integer.MAX_VALUE,
                "Device or resource busy");
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));

        VolumeException e = assertThrows(VolumeException.class, () -> transport.detach(attachment));

        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("not fully released after 60 s"), e.getMessage());
        assertTrue(e.getMessage().contains("path sdb (3:0:0:3, 8:16)"), e.getMessage());
        assertTrue(e.getMessage().contains("Device or resource busy"), e.getMessage());
        assertEquals(Duration.ofSeconds(60), clock.elapsed());
        assertEquals(List.of("sdb"), sysfs.diskNames(), "the other path is deleted; the busy one is named");
        int tries = sysfs.failedWrites().size();
        assertTrue(tries > 10 && tries < 1000, "bounded retries: " + tries);
        assertTrue(commands.commandLines().stream().noneMatch(c -> c.contains("--logout")),
                "the session still carries sdb: no logout");
    }

    @Test
    void aSinglePathWithoutMultipathdKeepsTheConfiguredReplacementTimeout() throws Exception {
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        expectRecordCreated(PORTALS[0]);
        expectLogin(PORTALS[0], 1, 3);

        Attachment attachment = transport.attach(request(Secrets.NONE, "portals", ""));

        assertEquals(sysfs.paths().dev().resolve("sdb"), attachment.device());
        assertEquals(Optional.of("120"), setting(PORTALS[0], ReplacementTimeout.SETTING),
                "the only path: I/O waits for a relogin as long as iscsid.conf says");
        assertEquals(Optional.of("None"), setting(PORTALS[0], ChapCredentials.AUTH_METHOD));
    }

    @Test
    void theVolumeContextChoosesTheReplacementTimeout() throws Exception {
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA, null);
        expectRecordCreated(PORTALS[0]);
        expectLogin(PORTALS[0], 1, 3);

        transport.attach(request(Secrets.NONE, "portals", "", "replacementTimeout", "30"));

        assertEquals(Optional.of("30"), setting(PORTALS[0], ReplacementTimeout.SETTING));
    }

    @Test
    void aBadReplacementTimeoutIsRefusedBeforeAnyCommand() {
        for (String bad : List.of("-1", "3601", "15s", "2.5")) {
            VolumeException e = assertThrows(VolumeException.class,
                    () -> transport.validate(request(Secrets.NONE, "replacementTimeout", bad)));
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome(), bad);
            assertTrue(e.getMessage().contains("replacementTimeout"), e.getMessage());
        }
        assertEquals(List.of(), commands.calls());
    }

    private Optional<String> setting(String portal, String key) throws IOException {
        return new NodeRecordFiles(database).readSetting(new IscsiPath(IQN, Portal.parse(portal), "default"), key);
    }
}
