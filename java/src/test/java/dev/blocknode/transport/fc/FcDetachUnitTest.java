package dev.blocknode.transport.fc;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.VpdTestPages;
import dev.blocknode.transport.Attachment;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The FC transport's detach (the map flushed and removed, then every path flushed and deleted, retried within a
 * bound, another LUN at a recorded address left alone) and the undo of an attach cut short by a crash.
 */
class FcDetachUnitTest extends FabricatedFcNode {

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
