package dev.blocknode.transport.fc;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.transport.Attachment;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The FC transport's attach: its keys checked, the LUN found through the target's WWPNs (targeted scans on each
 * usable remote port, every path the same LUN, one multipath map) or through WWIDs alone, and what the kernel's FC
 * stack showed in the VM tier (FCoE VN2VN with LIO as the array).
 */
class FcTransportUnitTest extends FabricatedFcNode {

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
}
