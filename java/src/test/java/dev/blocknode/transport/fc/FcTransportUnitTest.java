package dev.blocknode.transport.fc;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.VpdTestPages;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.san.LunAttacher;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The FC transport against a fabricated node: two HBAs (host1, host2) each seeing the array's target port
 * 0x500601603ba0415a through one remote port (target ids 0 and 1), a third HBA (host3) seeing only another
 * array. LUN 3 of the target is presented on both paths; host3's LUN 3 belongs to someone else.
 */
class FcTransportUnitTest {

    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String WWID = "3" + NAA;
    private static final String OTHER_NAA = "600a098038303053453f463045727a41";
    private static final String TARGET = "0x500601603ba0415a";
    private static final ScsiAddress PATH_1 = new ScsiAddress(1, 0, 0, 3);
    private static final ScsiAddress PATH_2 = new ScsiAddress(2, 0, 1, 3);
    private static final Duration PATHS = Duration.ofSeconds(15);
    private static final Duration MAP = Duration.ofSeconds(30);
    private static final Duration RELEASE = Duration.ofSeconds(60);

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ScriptedCommandRunner commands;
    private ManualClock clock;
    private RecordingBlockDevices block;
    private QueryOnlyMounter mounts;
    private boolean multipathd;
    private FcTransport transport;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        commands = new ScriptedCommandRunner();
        clock = new ManualClock();
        block = new RecordingBlockDevices(sysfs.paths());
        mounts = new QueryOnlyMounter();
        transport = new FcTransport(new Host(sysfs.paths(), commands, mounts, block), sysfs, clock.waiter(),
                () -> multipathd, new LunAttacher.Timeouts(PATHS, MAP, RELEASE));
    }

    private void twoHbasSeeingTheTarget() throws IOException {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.fcHost(3, "0x10000000c9a1b2c3", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1);
        sysfs.remotePort(3, 0, 0, "0x50060160aaaaaaaa", "Online", 0);
        sysfs.presentLun(new ScsiAddress(3, 0, 0, 3), "sdz", new DeviceNumber(65, 144), "naa." + OTHER_NAA, null);
    }

    private void lunOn(ScsiAddress address, String name, int minor) {
        sysfs.presentLun(address, name, new DeviceNumber(8, minor), "naa." + NAA, null);
    }

    private static AttachRequest request(Map<String, String> context) {
        return new AttachRequest("vol-fc", context, Map.of(), Secrets.NONE);
    }

    private static AttachRequest targets(String... extra) {
        Map<String, String> context = new HashMap<>(Map.of("targetWWNs", TARGET, "lun", "3"));
        for (int i = 0; i < extra.length; i += 2) {
            context.put(extra[i], extra[i + 1]);
        }
        return request(context);
    }

    private void expectMultipathWithoutDaemon(int minor, String name, List<String> slaves) {
        commands.expect("multipath", "-a", WWID).succeeds("wwid '" + WWID + "' added\n");
        commands.expect("multipath", WWID).andDo(c -> sysfs.addMap(minor, name, WWID, slaves));
    }

    private static VolumeException refused(org.junit.jupiter.api.function.Executable call) {
        return assertThrows(VolumeException.class, call);
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    // ---- identity and validation --------------------------------------------------------------------

    @Test
    void nameAndIdentifyingKeys() {
        assertEquals("fc", transport.name());
        assertEquals(Set.of("targetWWNs", "wwids"), transport.identifyingKeys());
    }

    @Test
    void validateAcceptsEverySpellingOfAWwpn() throws VolumeException {
        transport.validate(request(Map.of("targetWWNs", "0x500601603BA0415A, 50:06:01:68:3b:a0:41:5a,500601603ba04150",
                "lun", "0")));
        transport.validate(request(Map.of("wwids", WWID + ",naa." + OTHER_NAA)));
        transport.validate(request(Map.of("targetWWNs", TARGET, "lun", "16383", "wwid", "naa." + NAA)));
        assertEquals(List.of("500601603ba0415a", "500601683ba0415a"), FcVolumeSpec.parse(request(Map.of(
                "targetWWNs", "0x500601603BA0415A,50:06:01:68:3b:a0:41:5a,500601603ba0415a", "lun", "1")))
                .targetWwpns());
    }

    @Test
    void validateNamesTheKeyOfEveryMalformedValue() {
        Map<Map<String, String>, String> cases = Map.of(
                Map.of(), "targetWWNs",
                Map.of("lun", "3"), "targetWWNs",
                Map.of("targetWWNs", TARGET), "lun",
                Map.of("targetWWNs", TARGET, "lun", "-1"), "lun",
                Map.of("targetWWNs", TARGET, "lun", "three"), "lun",
                Map.of("targetWWNs", "0x5006016", "lun", "3"), "targetWWNs",
                Map.of("targetWWNs", TARGET + ",,", "lun", "3"), "targetWWNs",
                Map.of("targetWWNs", "50:06:01:60:3b:a0:41", "lun", "3"), "targetWWNs",
                Map.of("wwids", WWID + ",bogus!"), "wwids",
                Map.of("targetWWNs", TARGET, "lun", "3", "wwid", "naa.xyz"), "wwid");
        cases.forEach((context, key) -> {
            VolumeException e = refused(() -> transport.validate(request(context)));
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome(), context.toString());
            assertTrue(e.getMessage().contains("volume_context." + key), context + ": " + e.getMessage());
        });
        assertTrue(refused(() -> transport.validate(request(Map.of("targetWWNs", "0xzz00601603ba0415a", "lun", "1"))))
                .getMessage().contains("0xzz00601603ba0415a"));
    }

    // ---- attach through target WWPNs -----------------------------------------------------------------

    @Test
    void twoHbasGiveTwoPathsFromTargetedScansUnderOneMap() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        lunOn(PATH_2, "sdc", 32);
        expectMultipathWithoutDaemon(0, "mpatha", List.of("sdb", "sdc"));

        Attachment attachment = transport.attach(targets());

        assertEquals(List.of("class/scsi_host/host1/scan=0 0 3", "class/scsi_host/host2/scan=0 1 3"), sysfs.writeLog());
        assertEquals("0 0 3", sysfs.read(sysfs.scanFile(1)));
        assertEquals("0 1 3", sysfs.read(sysfs.scanFile(2)));
        assertEquals("", sysfs.read(sysfs.scanFile(3)), "host3 does not see the target: never scanned");
        assertFalse(sysfs.hasDisk("sdz"));
        assertEquals("fc", attachment.transport());
        assertEquals(sysfs.paths().dev().resolve("dm-0"), attachment.device());
        assertEquals(new DeviceNumber(253, 0), attachment.number());
        assertEquals(WWID, attachment.identity());
        assertEquals(Map.of("wwid", WWID, "paths", "1:0:0:3=sdb,2:0:1:3=sdc", "multipathMap", "mpatha",
                "targetWwpns", "500601603ba0415a", "lun", "3"), attachment.details());
        assertEquals(Duration.ZERO, clock.elapsed(), "nothing waited: the disks were there after the scans");
    }

    @Test
    void withMultipathdRunningEachPathIsHandedToIt() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        lunOn(PATH_2, "sdc", 32);
        multipathd = true;
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdb").succeeds("ok\n");
        commands.expect("multipathd", "add", "path", "sdc").succeeds("ok\n")
                .andDo(c -> sysfs.addMap(2, "mpathc", WWID, List.of("sdb", "sdc")));
        Attachment attachment = transport.attach(targets());
        assertEquals(sysfs.paths().dev().resolve("dm-2"), attachment.device());
        assertEquals("mpathc", attachment.details().get("multipathMap"));
    }

    @Test
    void aSinglePathWithMultipathdRunningStillGetsAMap() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        lunOn(PATH_1, "sdb", 16);
        multipathd = true;
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdb").andDo(c -> sysfs.addMap(0, "mpatha", WWID, List.of("sdb")));
        assertEquals(sysfs.paths().dev().resolve("dm-0"), transport.attach(targets()).device());
    }

    @Test
    void aMapThatNeverAppearsIsAnInternalErrorAfterTheMapTimeout() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        lunOn(PATH_1, "sdb", 16);
        multipathd = true;
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipathd", "add", "path", "sdb").succeeds("fail\n");
        VolumeException e = refused(() -> transport.attach(targets()));
        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("multipath map of " + WWID), e.getMessage());
        assertEquals(MAP, clock.elapsed());
    }

    @Test
    void portsThatAreMissingOfflineNotATargetOrBehindADownHbaAreSkipped() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.fcHost(3, "0x10000000c9a1b2c3", "Online");
        sysfs.fcHost(4, "0x10000000c9a1b2c4", "Linkdown");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        sysfs.remotePort(2, 0, 1, TARGET, "Blocked", 1);
        sysfs.remotePort(3, 0, 2, TARGET, "Online", -1);
        sysfs.remotePort(4, 0, 0, TARGET, "Online", 0);
        // host5 has no fc_host entry at all (its port vanished) but a stale remote port
        sysfs.remotePort(5, 0, 0, TARGET, "Online", 0);
        lunOn(PATH_1, "sdb", 16);

        Attachment attachment = transport.attach(targets());

        assertEquals(List.of("class/scsi_host/host1/scan=0 0 3"), sysfs.writeLog());
        for (int host = 2; host <= 5; host++) {
            assertEquals("", sysfs.read(sysfs.scanFile(host)), "host" + host);
        }
        assertEquals(sysfs.paths().dev().resolve("sdb"), attachment.device());
        assertEquals(new DeviceNumber(8, 16), attachment.number());
        assertEquals(Map.of("wwid", WWID, "paths", "1:0:0:3=sdb", "targetWwpns", "500601603ba0415a", "lun", "3"),
                attachment.details());
    }

    @Test
    void noUsablePortIsNotFoundSayingWhy() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Linkdown");
        sysfs.remotePort(1, 0, 0, TARGET, "Not Present", 0);
        sysfs.remotePort(2, 0, 0, TARGET, "Online", 0);
        VolumeException e = refused(() -> transport.attach(targets()));
        assertEquals(VolumeException.Outcome.NOT_FOUND, e.outcome());
        assertTrue(e.getMessage().contains("500601603ba0415a"), e.getMessage());
        assertTrue(e.getMessage().contains("rport-1:0-0 (0x500601603ba0415a) skipped: it is Not Present"), e.getMessage());
        assertTrue(e.getMessage().contains("host2 is Linkdown"), e.getMessage());
        assertEquals(List.of(), sysfs.writes());
    }

    @Test
    void aLunOnOnePathOnlyAttachesWithThatPathAndSaysSo() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);

        Attachment attachment = transport.attach(targets());

        assertEquals(List.of("class/scsi_host/host1/scan=0 0 3", "class/scsi_host/host2/scan=0 1 3"), sysfs.writeLog());
        assertEquals(PATHS, clock.elapsed(), "waited the whole paths timeout for the second path");
        assertEquals(sysfs.paths().dev().resolve("sdb"), attachment.device());
        assertEquals(Map.of("wwid", WWID, "paths", "1:0:0:3=sdb", "missingPaths", "2:0:1:3", "targetWwpns", "500601603ba0415a", "lun", "3"),
                attachment.details());
    }

    @Test
    void aDiskThatShowsUpLateIsWaitedFor() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        clock.schedule(Duration.ofSeconds(2), () -> sysfs.addDisk(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA));
        expectMultipathWithoutDaemon(0, "mpatha", List.of("sdb", "sdc"));
        assertEquals("1:0:0:3=sdb,2:0:1:3=sdc", transport.attach(targets()).details().get("paths"));
        assertEquals(Duration.ofSeconds(2), clock.elapsed());
    }

    @Test
    void noDiskOnAnyPathIsNotFound() throws Exception {
        twoHbasSeeingTheTarget();
        VolumeException e = refused(() -> transport.attach(targets()));
        assertEquals(VolumeException.Outcome.NOT_FOUND, e.outcome());
        assertTrue(e.getMessage().contains("[1:0:0:3, 2:0:1:3]"), e.getMessage());
    }

    @Test
    void pathsThatDisagreeOnTheWwidAreRefused() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        sysfs.presentLun(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + OTHER_NAA, null);
        VolumeException e = refused(() -> transport.attach(targets()));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("refusing"), e.getMessage());
        assertTrue(e.getMessage().contains(WWID) && e.getMessage().contains("3" + OTHER_NAA), e.getMessage());
    }

    @Test
    void aLunThatIsNotTheExpectedWwidIsRefused() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        lunOn(PATH_2, "sdc", 32);
        VolumeException e = refused(() -> transport.attach(targets("wwid", "naa." + OTHER_NAA)));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("refusing"), e.getMessage());
        assertTrue(e.getMessage().contains("not the expected [3" + OTHER_NAA + "]"), e.getMessage());
    }

    @Test
    void theExpectedWwidMayBeGivenInAnySpelling() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        lunOn(PATH_2, "sdc", 32);
        expectMultipathWithoutDaemon(0, "mpatha", List.of("sdb", "sdc"));
        assertEquals(WWID, transport.attach(targets("wwid", NAA.toUpperCase())).identity());
    }

    @Test
    void aDiskWithoutAnyWwidIsRefused() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        sysfs.presentLun(PATH_1, "sdb", new DeviceNumber(8, 16), null, null);
        VolumeException e = refused(() -> transport.attach(targets()));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("reports no WWID"), e.getMessage());
    }

    @Test
    void attachingAgainFindsWhatIsThereAskingEachDiskWhichLunItIsWithoutScanningOrCommands() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        lunOn(PATH_2, "sdc", 32);
        expectMultipathWithoutDaemon(0, "mpatha", List.of("sdb", "sdc"));
        Attachment first = transport.attach(targets());
        int writes = sysfs.writes().size();
        int calls = commands.calls().size();
        Attachment again = transport.attach(targets());
        assertEquals(first, again);
        assertEquals(List.of("class/block/sdb/device/rescan=1", "class/block/sdc/device/rescan=1"), writesSince(writes));
        assertEquals(calls, commands.calls().size());
    }

    // ---- what the kernel's FC stack showed (VM tier: FCoE VN2VN, LIO as the array) ----------------------

    @Test
    void anArrayPortThatIsBothTargetAndInitiatorIsUsedAndAnInitiatorOnlyPortIsNot() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        // LIO's tcm_fc port logs in as an initiator too (FCoE lports are both); another host's HBA is only one
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0, "FCP Target, FCP Initiator");
        sysfs.remotePort(2, 0, 0, "0x200002fc00000003", "Online", -1, "FCP Initiator");
        lunOn(PATH_1, "sdb", 16);

        Attachment attachment = transport.attach(targets("targetWWNs", TARGET + ",0x200002fc00000003"));

        assertEquals(List.of("class/scsi_host/host1/scan=0 0 3"), sysfs.writeLog());
        assertEquals(Map.of("wwid", WWID, "paths", "1:0:0:3=sdb", "targetWwpns", "500601603ba0415a,200002fc00000003",
                "lun", "3"), attachment.details());
    }

    @Test
    void anOnlinePortThatKeptItsTargetIdButLostTheTargetRoleIsSkipped() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0, "FCP Target");
        // the kernel never takes a target id back: a port that logged in again as an initiator only keeps it
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1, "FCP Initiator");
        lunOn(PATH_1, "sdb", 16);
        lunOn(PATH_2, "sdc", 32);

        assertEquals(Map.of("wwid", WWID, "paths", "1:0:0:3=sdb", "targetWwpns", "500601603ba0415a", "lun", "3"),
                transport.attach(targets()).details());
        assertEquals(List.of("class/scsi_host/host1/scan=0 0 3"), sysfs.writeLog());

        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0, "FCP Initiator");
        sysfs.removeDisk("sdb");
        VolumeException e = refused(() -> transport.attach(targets()));
        assertEquals(VolumeException.Outcome.NOT_FOUND, e.outcome());
        assertTrue(e.getMessage().contains("rport-2:0-1 (0x500601603ba0415a) skipped: it does not have the FCP Target"
                + " role (roles: [FCP Initiator])"), e.getMessage());
    }

    @Test
    void aTargetAppearsInSysfsWithItsFirstScannedLunAndNothingOfItLingersAfterTheDetach() throws Exception {
        twoHbasSeeingTheTarget();
        assertEquals(List.of(), sysfs.scsiTargets(), "no SCSI target behind a remote port before a scan");
        Attachment attachment = attachedThroughTwoPaths();
        assertEquals(List.of("1:0:0", "2:0:1"), sysfs.scsiTargets());
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));

        transport.detach(attachment);

        assertEquals(List.of(), sysfs.scsiTargets());
        assertFalse(java.nio.file.Files.exists(sysfs.sys().resolve("class/fc_transport/target1:0:0")));
    }

    @Test
    void aPathWhosePortWasGonePastDevLossTmoIsScannedInAgainOnceThePortIsBack() throws Exception {
        Attachment attachment = attachedThroughTwoPaths();
        sysfs.loseRemotePort(2, 0, 1); // the kernel removed its target and the disk
        assertFalse(sysfs.hasDisk("sdc"));
        sysfs.remotePort(2, 0, 1, TARGET, "Online", 1); // it logged in again; with manual scanning, no LUN came back
        lunOn(PATH_2, "sdd", 48);
        int writes = sysfs.writes().size();
        commands.expect("multipath", "-a", WWID);
        commands.expect("multipath", WWID).andDo(c -> {
            sysfs.removeMap("dm-0");
            sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdd"));
        });

        Attachment again = transport.attach(targets());

        assertEquals(List.of("class/block/sdb/device/rescan=1", "class/scsi_host/host2/scan=0 1 3"), writesSince(writes));
        assertEquals("1:0:0:3=sdb,2:0:1:3=sdd", again.details().get("paths"));
        assertEquals(attachment.device(), again.device());
    }

    // ---- a LUN number the array reused (the VM tier's fc scenario, "reused" part) -------------------------

    private static final String REUSED_NAA = "60014050fc0e2e000090000000000000";

    /** Disks of the LUN were left on the node; the array then deleted the LUN and mapped another at number 3. */
    private void staleDisksOfADeletedLun() throws IOException {
        twoHbasSeeingTheTarget();
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addDisk(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.presentLun(PATH_1, "sdd", new DeviceNumber(8, 48), "naa." + REUSED_NAA, null);
        sysfs.presentLun(PATH_2, "sde", new DeviceNumber(8, 64), "naa." + REUSED_NAA, null);
    }

    @Test
    void aStaleDiskOfADeletedLunIsNeverTakenForThatLunThoughItStillNamesIt() throws Exception {
        staleDisksOfADeletedLun();

        VolumeException e = refused(() -> transport.attach(targets("wwid", WWID)));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("is LUN 3" + REUSED_NAA + ", not the expected [" + WWID + "]"), e.getMessage());
        assertEquals(List.of("class/block/sdb/device/rescan=1", "class/block/sdb/device/delete=1",
                "class/scsi_host/host1/scan=0 0 3", "class/block/sdc/device/rescan=1", "class/block/sdc/device/delete=1",
                "class/scsi_host/host2/scan=0 1 3"), sysfs.writeLog());
        assertEquals(List.of("sdd", "sde"), sysfs.diskNames(), "the stale disks went; the LUN there now was scanned in");
    }

    @Test
    void theLunNowAtAReusedNumberGetsDisksOfItsOwn() throws Exception {
        staleDisksOfADeletedLun();
        String reused = "3" + REUSED_NAA;
        commands.expect("multipath", "-a", reused);
        commands.expect("multipath", reused).andDo(c -> sysfs.addMap(0, "mpatha", reused, List.of("sdd", "sde")));

        Attachment attachment = transport.attach(targets("wwid", reused));

        assertEquals(reused, attachment.identity());
        assertEquals("1:0:0:3=sdd,2:0:1:3=sde", attachment.details().get("paths"));
        assertEquals(List.of(sysfs.paths().dev().resolve("sdb"), sysfs.paths().dev().resolve("sdc")), block.flushed());
    }

    @Test
    void theDeletedLunsMapOverStaleDisksIsFlushedAndTheAddressesScannedAfresh() throws Exception {
        staleDisksOfADeletedLun();
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")); // multipathd mapped the stale disks
        String reused = "3" + REUSED_NAA;
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));
        commands.expect("multipath", "-a", reused);
        commands.expect("multipath", reused).andDo(c -> sysfs.addMap(1, "mpathb", reused, List.of("sdd", "sde")));

        Attachment attachment = transport.attach(targets("wwid", reused));

        assertEquals("1:0:0:3=sdd,2:0:1:3=sde", attachment.details().get("paths"));
        assertEquals(List.of("class/block/sdb/device/rescan=1", "class/block/sdc/device/rescan=1",
                "class/block/sdc/device/delete=1", "class/block/sdb/device/delete=1", "class/scsi_host/host1/scan=0 0 3",
                "class/scsi_host/host2/scan=0 1 3"), sysfs.writeLog(),
                "the map is flushed once each of its paths was asked and is the new LUN; then its paths go");
        assertEquals(List.of("sdd", "sde"), sysfs.diskNames());
    }

    @Test
    void aStaleDiskUnderAnOpenMapStaysAndTheAttachIsRefused() throws Exception {
        staleDisksOfADeletedLun();
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc")); // the deleted LUN's map, still mounted on the node
        block.claimed(sysfs.paths().dev().resolve("dm-0"), true);
        String reused = "3" + REUSED_NAA;

        VolumeException e = refused(() -> transport.attach(targets("wwid", reused)));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(e.getMessage().contains("holds the paths of LUN " + reused), e.getMessage());
        assertTrue(sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc") && sysfs.hasMap("dm-0"));
        assertTrue(sysfs.writeLog().stream().allMatch(w -> w.endsWith("/rescan=1")), sysfs.writeLog().toString());
    }

    @Test
    void aMapOfTheDeletedLunWithAPathStillLeadingToItStays() throws Exception {
        staleDisksOfADeletedLun();
        sysfs.presentLun(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA, null); // path 2 still reaches it
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        String reused = "3" + REUSED_NAA;

        VolumeException e = refused(() -> transport.attach(targets("wwid", reused)));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome());
        assertTrue(sysfs.hasMap("dm-0") && sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc"));
    }

    @Test
    void aDiskThatIsNotRunningIsNotAskedAgain() throws Exception {
        staleDisksOfADeletedLun();
        sysfs.setState("sdb", "blocked");
        sysfs.setState("sdc", "transport-offline");

        VolumeException e = refused(() -> transport.attach(targets("wwid", WWID)));

        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("no path of LUN " + WWID + " is running"), e.getMessage());
        assertEquals(List.of(), sysfs.writeLog(), "a rescan of a blocked device could hang: none is written");
    }

    // ---- attach through WWIDs ----------------------------------------------------------------------

    @Test
    void wwidsFindsDisksAlreadyPresentWithoutScanning() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.fcHost(2, "0x10000000c9a1b2c2", "Online");
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addDisk(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 4), "sdd", new DeviceNumber(8, 48), "naa." + OTHER_NAA);
        expectMultipathWithoutDaemon(1, "mpathb", List.of("sdb", "sdc"));

        Attachment attachment = transport.attach(request(Map.of("wwids", "naa." + NAA)));

        assertEquals(List.of(), sysfs.writes());
        assertEquals(sysfs.paths().dev().resolve("dm-1"), attachment.device());
        assertEquals(Map.of("wwid", WWID, "paths", "1:0:0:3=sdb,2:0:1:3=sdc", "multipathMap", "mpathb"),
                attachment.details());
    }

    @Test
    void wwidsUsesAnExistingMap() throws Exception {
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addDisk(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        Attachment attachment = transport.attach(request(Map.of("wwids",
                "3600dead0000000000000000000000000," + WWID)));
        assertEquals(sysfs.paths().dev().resolve("dm-0"), attachment.device());
    }

    @Test
    void wwidsOfNoDiskIsNotFound() throws Exception {
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + OTHER_NAA);
        VolumeException e = refused(() -> transport.attach(request(Map.of("wwids", WWID))));
        assertEquals(VolumeException.Outcome.NOT_FOUND, e.outcome());
        assertTrue(e.getMessage().contains(WWID), e.getMessage());
    }

    // ---- detach ------------------------------------------------------------------------------------

    private Attachment attachedThroughTwoPaths() throws Exception {
        twoHbasSeeingTheTarget();
        lunOn(PATH_1, "sdb", 16);
        lunOn(PATH_2, "sdc", 32);
        expectMultipathWithoutDaemon(0, "mpatha", List.of("sdb", "sdc"));
        Attachment attachment = transport.attach(targets());
        commands.assertAllConsumed();
        return attachment;
    }

    private List<String> writesSince(int index) {
        return sysfs.writeLog().subList(index, sysfs.writeLog().size());
    }

    @Test
    void detachFlushesTheMapThenFlushesAndDeletesEveryPath() throws Exception {
        Attachment attachment = attachedThroughTwoPaths();
        int before = sysfs.writes().size();
        int callsBefore = commands.calls().size();
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));

        transport.detach(attachment);

        assertEquals(List.of("dmsetup message mpatha 0 fail_if_no_path", "multipath -f mpatha"),
                commands.commandLines().subList(callsBefore, commands.calls().size()));
        assertEquals(List.of("class/block/sdb/device/delete=1", "class/block/sdc/device/delete=1"), writesSince(before));
        assertEquals(List.of(sysfs.paths().dev().resolve("sdb"), sysfs.paths().dev().resolve("sdc")), block.flushed());
        assertFalse(sysfs.hasMap("dm-0"));
        assertFalse(sysfs.hasDisk("sdb"));
        assertFalse(sysfs.hasDisk("sdc"));
        assertEquals(Duration.ZERO, clock.elapsed());

        transport.detach(attachment); // again: nothing left to do, nothing done
        assertEquals(2, writesSince(before).size());
    }

    @Test
    void detachRetriesWhileTheMapIsInUseThenFinishes() throws Exception {
        Attachment attachment = attachedThroughTwoPaths();
        int before = sysfs.writes().size();
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        for (int i = 0; i < 4; i++) {
            commands.expect("multipath", "-f", "mpatha").fails(1, "mpatha: map in use");
        }
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));

        transport.detach(attachment);

        assertEquals(Duration.ofSeconds(1), clock.elapsed(), "four pauses of 250 ms between the tries");
        assertEquals(List.of("class/block/sdb/device/delete=1", "class/block/sdc/device/delete=1"), writesSince(before));
    }

    @Test
    void detachGivesUpAfterTheBoundNamingTheHolderAndLeavesThePaths() throws Exception {
        Attachment attachment = attachedThroughTwoPaths();
        sysfs.addDm(1, "vg0-data", "LVM-xyz", List.of("dm-0"));
        int before = sysfs.writes().size();
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").fails(1, "mpatha: map in use").anyTimes();

        VolumeException e = refused(() -> transport.detach(attachment));

        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("not fully released after 60 s"), e.getMessage());
        assertTrue(e.getMessage().contains("in use by dm-1 (vg0-data)"), e.getMessage());
        assertTrue(e.getMessage().contains("mpatha (dm-0, " + WWID + ")"), e.getMessage());
        assertEquals(RELEASE, clock.elapsed());
        assertEquals(List.of(), writesSince(before), "no path is deleted from under a live map");
        assertTrue(sysfs.hasDisk("sdb") && sysfs.hasDisk("sdc") && sysfs.hasMap("dm-0"));
        long tries = commands.commandLines().stream().filter(c -> c.equals("multipath -f mpatha")).count();
        assertTrue(tries > 100, "kept trying: " + tries);
    }

    @Test
    void detachNamesTheMountOfABusyMap() throws Exception {
        Attachment attachment = attachedThroughTwoPaths();
        mounts.entries.add(new MountEntry(40, 1, new DeviceNumber(253, 0), "/",
                Path.of("/var/lib/kubelet/plugins/kubernetes.io/csi/x/globalmount"), "rw", "ext4",
                "/dev/mapper/mpatha", "rw"));
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").fails(1, "mpatha: map in use").anyTimes();
        VolumeException e = refused(() -> transport.detach(attachment));
        assertTrue(e.getMessage().contains("mounted at /var/lib/kubelet/plugins/kubernetes.io/csi/x/globalmount"),
                e.getMessage());
    }

    @Test
    void detachWhenEverythingIsAlreadyGoneDoesNothing() throws Exception {
        Attachment attachment = new Attachment("fc", sysfs.paths().dev().resolve("dm-0"), new DeviceNumber(253, 0),
                WWID, Map.of("wwid", WWID, "paths", "1:0:0:3=sdb,2:0:1:3=sdc", "multipathMap", "mpatha"));
        transport.detach(attachment);
        assertEquals(List.of(), commands.calls());
        assertEquals(List.of(), sysfs.writes());
        assertEquals(List.of(), block.flushed());
    }

    @Test
    void detachFinishesAHalfDoneTeardown() throws Exception {
        Attachment attachment = attachedThroughTwoPaths();
        // an earlier try removed the map and one path, then the call timed out
        sysfs.removeMap("dm-0");
        sysfs.removeDisk("sdb");
        int before = sysfs.writes().size();
        transport.detach(attachment);
        assertEquals(List.of("class/block/sdc/device/delete=1"), writesSince(before));
        assertFalse(sysfs.hasDisk("sdc"));
    }

    @Test
    void detachLeavesAnotherLunNowAtARecordedAddressAlone() throws Exception {
        Attachment attachment = attachedThroughTwoPaths();
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> {
            sysfs.removeMap("dm-0");
            // meanwhile sdb went away and another LUN came up at its address under the same name
            sysfs.removeDisk("sdb");
            sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + OTHER_NAA);
        });
        transport.detach(attachment);
        assertTrue(sysfs.hasDisk("sdb"), "not ours: left alone");
        assertFalse(sysfs.hasDisk("sdc"));
    }

    @Test
    void detachRetriesAPathThatCannotBeFlushedYet() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        lunOn(PATH_1, "sdb", 16);
        Attachment attachment = transport.attach(targets());
        assertEquals(sysfs.paths().dev().resolve("sdb"), attachment.device());
        block.failFlush(attachment.device(), new IOException("Input/output error"));
        clock.schedule(Duration.ofSeconds(3), () -> block.failFlush(attachment.device(), null));

        transport.detach(attachment);

        assertEquals(Duration.ofSeconds(3), clock.elapsed());
        assertFalse(sysfs.hasDisk("sdb"));
        assertEquals(List.of(attachment.device()), block.flushed());
    }

    @Test
    void detachOfAPathHeldBySomethingElseGivesUpNamingIt() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        lunOn(PATH_1, "sdb", 16);
        Attachment attachment = transport.attach(targets());
        sysfs.addDm(5, "vg1-lv", "LVM-held", List.of("sdb"));
        VolumeException e = refused(() -> transport.detach(attachment));
        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("is held by dm-5 (vg1-lv)"), e.getMessage());
        assertTrue(sysfs.hasDisk("sdb"));
    }

    @Test
    void detachAlsoRemovesAMapMultipathdBuiltLaterUnderAnotherDesignator() throws Exception {
        sysfs.fcHost(1, "0x10000000c9a1b2c1", "Online");
        sysfs.remotePort(1, 0, 0, TARGET, "Online", 0);
        sysfs.presentLun(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA,
                VpdTestPages.naaAndT10(NAA, "LIO-ORG block1  4f2a"));
        Attachment attachment = transport.attach(targets());
        assertEquals(sysfs.paths().dev().resolve("sdb"), attachment.device());
        // multipathd started afterwards and named the map from the T10 designator
        sysfs.addMap(3, "mpathd", "1LIO-ORG_block1_4f2a", List.of("sdb"));
        commands.expect("dmsetup", "message", "mpathd", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpathd").andDo(c -> sysfs.removeMap("dm-3"));
        transport.detach(attachment);
        assertFalse(sysfs.hasMap("dm-3"));
        assertFalse(sysfs.hasDisk("sdb"));
    }

    @Test
    void detachOfUnreadableDetailsIsInternal() {
        Attachment attachment = new Attachment("fc", Path.of("/dev/sdb"), new DeviceNumber(8, 16), "",
                Map.of("paths", "1:0:0:3=sdb"));
        VolumeException e = refused(() -> transport.detach(attachment));
        assertEquals(VolumeException.Outcome.INTERNAL, e.outcome());
        assertTrue(e.getMessage().contains("\"wwid\""), e.getMessage());
    }

    // ---- an attach cut short (the plugin died while the record said ATTACHING) ------------------------

    @Test
    void abandoningAnInterruptedAttachTakesBackTheLunsDisksAndMapAndNothingElse() throws Exception {
        twoHbasSeeingTheTarget();
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA); // scanned in before the crash
        sysfs.addDisk(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 4), "sdy", new DeviceNumber(8, 48), "naa." + OTHER_NAA);
        commands.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path");
        commands.expect("multipath", "-f", "mpatha").andDo(c -> sysfs.removeMap("dm-0"));

        transport.abandon(targets());

        assertFalse(sysfs.hasMap("dm-0"), "the map multipathd built over the scanned disks is flushed");
        assertFalse(sysfs.hasDisk("sdb") || sysfs.hasDisk("sdc"), "the LUN's disks are deleted");
        assertTrue(sysfs.hasDisk("sdy"), "another LUN of the same target is never touched");
    }

    @Test
    void abandoningLeavesADiskSomethingHoldsAndTheOthersGo() throws Exception {
        twoHbasSeeingTheTarget();
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA); // scanned in before the crash
        sysfs.addDisk(PATH_2, "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.addDm(5, "vg0-data", "LVM-held", List.of("sdb"));

        transport.abandon(targets());

        assertTrue(sysfs.hasDisk("sdb"), "held by dm-5: left in place");
        assertFalse(sysfs.hasDisk("sdc"));
    }

    @Test
    void abandoningAnAttachByWwidsAloneTouchesNothing() throws Exception {
        twoHbasSeeingTheTarget();
        sysfs.addDisk(PATH_1, "sdb", new DeviceNumber(8, 16), "naa." + NAA); // scanned in before the crash

        transport.abandon(request(Map.of("wwids", WWID)));

        assertTrue(sysfs.hasDisk("sdb"), "an attach by WWID scans nothing, so it has nothing to take back");
        assertEquals(List.of(), sysfs.writeLog());
    }
}
