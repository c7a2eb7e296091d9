package dev.blocknode.transport.fc;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.Attachment;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A LUN number the array reused (the VM tier's fc scenario, its "reused" part): the disks a deleted LUN left on the
 * node still name it, and a new LUN now answers at that number. The attach must never take a stale disk for the new
 * LUN, must get disks of its own for it, and must not take down what something still holds.
 */
class FcReusedLunNumberUnitTest extends FabricatedFcNode {

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
}
