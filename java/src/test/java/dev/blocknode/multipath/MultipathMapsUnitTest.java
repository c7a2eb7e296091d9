package dev.blocknode.multipath;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.ScsiDeviceState;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.testing.FakeSysfs;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MultipathMapsUnitTest {

    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final String OTHER = "600a098038303053453f463045727a41";

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private MultipathMaps maps;

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 3), "sdb", new DeviceNumber(8, 16), "naa." + NAA);
        sysfs.addDisk(new ScsiAddress(2, 0, 1, 3), "sdc", new DeviceNumber(8, 32), "naa." + NAA);
        sysfs.addDisk(new ScsiAddress(1, 0, 0, 4), "sdd", new DeviceNumber(8, 48), "naa." + OTHER);
        sysfs.addMap(0, "mpatha", "3" + NAA, List.of("sdb", "sdc"));
        sysfs.addMap(1, "3" + OTHER, "3" + OTHER, List.of("sdd"));
        sysfs.addDm(2, "mpatha1", "part1-mpath-3" + NAA, List.of("dm-0"));
        sysfs.addDm(3, "vg0-data", "LVM-Qm9oZ2xl", List.of("dm-1"));
        maps = new MultipathMaps(sysfs.paths());
    }

    @Test
    void onlyMultipathMapsAreListed() throws IOException {
        List<MultipathMap> all = maps.all();
        assertEquals(List.of("dm-0", "dm-1"), all.stream().map(MultipathMap::kernelName).toList());
        MultipathMap mpatha = all.get(0);
        assertEquals("mpatha", mpatha.name());
        assertEquals(Wwid.naa(NAA), mpatha.wwid());
        assertEquals(new DeviceNumber(253, 0), mpatha.number());
        assertEquals(List.of("sdb", "sdc"), mpatha.slaves());
        assertEquals(sysfs.paths().dev().resolve("dm-0"), mpatha.devicePath(sysfs.paths()));
    }

    @Test
    void findsByWwidInAnySpellingByNameAndByPath() throws IOException {
        assertEquals("dm-0", maps.byWwid(Wwid.parse("naa." + NAA.toUpperCase())).orElseThrow().kernelName());
        assertEquals("dm-0", maps.byWwid(Wwid.parse(NAA)).orElseThrow().kernelName());
        assertEquals("dm-1", maps.byWwid(Wwid.parse("3" + OTHER)).orElseThrow().kernelName());
        assertEquals(Optional.empty(), maps.byWwid(Wwid.parse("36000000000000000000000000000000a")));
        assertEquals("dm-0", maps.byName("mpatha").orElseThrow().kernelName());
        assertEquals(Optional.empty(), maps.byName("mpatha1"), "a partition is not a map");
        assertEquals("dm-0", maps.holding("sdc").orElseThrow().kernelName());
        assertEquals("dm-1", maps.holding("sdd").orElseThrow().kernelName());
        assertEquals(Optional.empty(), maps.holding("sdz"));
        assertEquals(Optional.empty(), maps.read("dm-3"));
    }

    @Test
    void namesHolders() throws IOException {
        assertEquals(List.of("dm-2 (mpatha1)"), maps.holders(maps.byName("mpatha").orElseThrow()));
        assertEquals(List.of("dm-3 (vg0-data)"), maps.holders(maps.holding("sdd").orElseThrow()));
        assertEquals("sdb", maps.describe("sdb"));
    }

    @Test
    void refreshSeesAMapGo() throws IOException {
        MultipathMap mpatha = maps.byName("mpatha").orElseThrow();
        assertTrue(maps.refresh(mpatha).isPresent());
        sysfs.removeMap("dm-2");
        sysfs.removeMap("dm-0");
        assertFalse(maps.refresh(mpatha).isPresent());
        assertEquals(Optional.empty(), maps.holding("sdb"));
    }

    @Test
    void pathStatesForVolumeHealth() throws IOException {
        sysfs.setState("sdc", "transport-offline");
        MultipathMap mpatha = maps.byName("mpatha").orElseThrow();
        List<PathState> states = maps.pathStates(mpatha);
        assertEquals(List.of(new PathState("sdb", ScsiDeviceState.RUNNING),
                new PathState("sdc", ScsiDeviceState.TRANSPORT_OFFLINE)), states);
        assertTrue(states.get(0).healthy());
        assertFalse(states.get(1).healthy());
        sysfs.removeDisk("sdc");
        assertEquals(ScsiDeviceState.GONE, maps.pathStates(mpatha).get(1).state());
    }
}
