package dev.blocknode.transport.san;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.testing.FakeSysfs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What takes a place under the node's volume limit outside blocknode, over a fabricated sysfs: multipath maps
 * (one per LUN, however many paths it has) that none of the given devices is; not a map's kpartx partition, not
 * LVM or other dm devices, not a disk's paths one by one.
 */
class MultipathMapCountUnitTest {

    private static final String LUN_A = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String LUN_B = "600a098038303053453f463045727a41";

    @TempDir
    Path temp;

    @Test
    void countsEachMapNotOwnedOnce() throws Exception {
        FakeSysfs sysfs = new FakeSysfs(temp);
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + LUN_A);
        sysfs.addDisk(new ScsiAddress(2, 0, 1, 3), "sdc", new DeviceNumber(8, 32), "naa." + LUN_A);
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 4), "sdd", new DeviceNumber(8, 48), "naa." + LUN_B);
        sysfs.addMap(0, "mpatha", "3" + LUN_A, List.of("sdb", "sdc"));
        sysfs.addMap(1, "mpathb", "3" + LUN_B, List.of("sdd"));
        sysfs.addDm(2, "mpatha1", "part1-mpath-3" + LUN_A, List.of("dm-0"));
        sysfs.addDm(3, "vg0-data", "LVM-Qm9oZ2xl", List.of("dm-1"));
        MultipathMapCount count = new MultipathMapCount(sysfs.paths());

        assertEquals(2, count.countNotAmong(Set.of()), "two LUNs, four paths, a partition and an LV: two maps");
        assertEquals(1, count.countNotAmong(Set.of(new DeviceNumber(253, 0))), "mpatha is a blocknode volume's");
        assertEquals(0, count.countNotAmong(Set.of(new DeviceNumber(253, 0), new DeviceNumber(253, 1))));
        assertEquals(2, count.countNotAmong(Set.of(new DeviceNumber(8, 16))), "a path is not its map");
    }

    @Test
    void noMapsNoCount() throws Exception {
        assertEquals(0, new MultipathMapCount(new FakeSysfs(temp).paths()).countNotAmong(Set.of()));
    }
}
