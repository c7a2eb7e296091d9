package dev.blocknode.multipath;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.transport.san.AttachedLun;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** VolumeCondition for SAN volumes: a map that lost a path still serves, and that must show. */
class PathHealthUnitTest {

    private static final String WWID = "360014052e3c1d6a5b4c34b58a1f2e3d4";

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private Map<String, String> record;

    @BeforeEach
    void twoPathMap() throws Exception {
        sysfs = new FakeSysfs(temp);
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 1), "sdb", new DeviceNumber(8, 16), "naa." + WWID.substring(1));
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 1), "sdc", new DeviceNumber(8, 32), "naa." + WWID.substring(1));
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        record = Map.of("wwid", WWID, "multipathMap", "mpatha", "paths", "3:0:0:1=sdb,4:0:0:1=sdc");
    }

    /** The LUN as a staging record keeps it: the attachment details a SAN transport wrote. */
    private Optional<PathHealth.Report> inspect(Map<String, String> details) throws IOException {
        AttachedLun lun = AttachedLun.fromDetails(details, Path.of("/dev/dm-0"), new DeviceNumber(253, 0));
        return PathHealth.inspect(sysfs.paths(), lun.mapName(), lun.pathNames(), Optional.of(lun.number()));
    }

    @Test
    void theMapIsFoundAtTheRecordedDeviceWithoutReadingTheOtherMaps() throws Exception {
        // Another volume's map that cannot be read: a look that reads every map of the node fails on it.
        Path other = sysfs.addDm(7, "other", "mpath-3600a0b80000000000000000000000007", List.of());
        Files.delete(other.resolve("dm/uuid"));
        Files.createDirectories(other.resolve("dm/uuid"));
        assertEquals(Optional.empty(), problem(record));
    }

    private Optional<String> problem(Map<String, String> details) throws IOException {
        return inspect(details).flatMap(PathHealth.Report::problem);
    }

    @Test
    void allPathsRunningIsHealthy() throws Exception {
        assertEquals(Optional.empty(), problem(record));
    }

    @Test
    void aFailedPathIsNamed() throws Exception {
        sysfs.setState("sdc", "transport-offline");
        String problem = problem(record).orElseThrow();
        assertTrue(problem.contains("serves on 1 path(s)") && problem.contains("sdc is transport-offline"), problem);
    }

    @Test
    void aPathDroppedFromTheMapAndAVanishedMapAreNamed() throws Exception {
        sysfs.removeMap("dm-0");
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb"));
        assertTrue(problem(record).orElseThrow().contains("sdc is no longer in the map"));
        sysfs.removeMap("dm-0");
        assertTrue(problem(record).orElseThrow().contains("mpatha of the volume is gone"));
    }

    @Test
    void aLunWithoutAMapOrARecordedPathHasNoPathProblem() throws Exception {
        assertEquals(Optional.empty(), problem(Map.of("wwid", WWID)));
    }

    @Test
    void theReportCountsServingAndFailedPaths() throws Exception {
        PathHealth.Report healthy = inspect(record).orElseThrow();
        assertEquals(2, healthy.serving());
        assertEquals(0, healthy.failed());
        sysfs.setState("sdb", "offline");
        PathHealth.Report degraded = inspect(record).orElseThrow();
        assertEquals(1, degraded.serving());
        assertEquals(List.of("sdb is offline"), degraded.failures());
        sysfs.removeMap("dm-0");
        PathHealth.Report mapGone = inspect(record).orElseThrow();
        assertEquals(0, mapGone.serving());
        assertEquals(2, mapGone.failed(), "both recorded paths are lost with the map: " + mapGone.failures());
    }

    @Test
    void aSinglePathVolumeWithoutAMapReportsItsPathDevice() throws Exception {
        Map<String, String> single = Map.of("wwid", WWID, "paths", "3:0:0:1=sdb");
        assertEquals(Optional.empty(), problem(single));
        assertEquals(1, inspect(single).orElseThrow().serving());
        sysfs.setState("sdb", "transport-offline");
        String problem = problem(single).orElseThrow();
        assertTrue(problem.contains("serves on 0 path(s)") && problem.contains("sdb is transport-offline"), problem);
        sysfs.removeDisk("sdb");
        assertTrue(problem(single).orElseThrow().contains("sdb is gone"));
    }
}
