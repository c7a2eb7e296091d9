package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.FakeSysfs;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** VolumeCondition for SAN volumes: a map that lost a path still serves, and that must show. */
class PathHealthUnitTest {

    private static final String WWID = "360014052e3c1d6a5b4c34b58a1f2e3d4";

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private StagingRecord record;

    @BeforeEach
    void twoPathMap() throws Exception {
        sysfs = new FakeSysfs(temp);
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 1), "sdb", new DeviceNumber(8, 16), "naa." + WWID.substring(1));
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 1), "sdc", new DeviceNumber(8, 32), "naa." + WWID.substring(1));
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        record = StagingRecord.newBuilder().setVolumeId("v")
                .putAttachment("multipathMap", "mpatha").putAttachment("paths", "3:0:0:1=sdb,4:0:0:1=sdc").build();
    }

    @Test
    void allPathsRunningIsHealthy() throws Exception {
        assertEquals(Optional.empty(), PathHealth.problem(sysfs.paths(), record));
    }

    @Test
    void aFailedPathIsNamed() throws Exception {
        sysfs.setState("sdc", "transport-offline");
        String problem = PathHealth.problem(sysfs.paths(), record).orElseThrow();
        assertTrue(problem.contains("serves on 1 path(s)") && problem.contains("sdc is transport-offline"), problem);
    }

    @Test
    void aPathDroppedFromTheMapAndAVanishedMapAreNamed() throws Exception {
        sysfs.removeMap("dm-0");
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb"));
        assertTrue(PathHealth.problem(sysfs.paths(), record).orElseThrow().contains("sdc is no longer in the map"));
        sysfs.removeMap("dm-0");
        assertTrue(PathHealth.problem(sysfs.paths(), record).orElseThrow().contains("mpatha of the volume is gone"));
    }

    @Test
    void aVolumeWithoutAMapHasNoPathProblem() throws Exception {
        assertEquals(Optional.empty(), PathHealth.problem(sysfs.paths(),
                StagingRecord.newBuilder().setVolumeId("local").build()));
    }

    @Test
    void theReportCountsServingAndFailedPaths() throws Exception {
        PathHealth.Report healthy = PathHealth.inspect(sysfs.paths(), record).orElseThrow();
        assertEquals(2, healthy.serving());
        assertEquals(0, healthy.failed());
        sysfs.setState("sdb", "offline");
        PathHealth.Report degraded = PathHealth.inspect(sysfs.paths(), record).orElseThrow();
        assertEquals(1, degraded.serving());
        assertEquals(List.of("sdb is offline"), degraded.failures());
        sysfs.removeMap("dm-0");
        PathHealth.Report mapGone = PathHealth.inspect(sysfs.paths(), record).orElseThrow();
        assertEquals(0, mapGone.serving());
        assertEquals(2, mapGone.failed(), "both recorded paths are lost with the map: " + mapGone.failures());
    }

    @Test
    void aSinglePathVolumeWithoutAMapReportsItsPathDevice() throws Exception {
        StagingRecord single = StagingRecord.newBuilder().setVolumeId("single")
                .putAttachment("paths", "3:0:0:1=sdb").build();
        assertEquals(Optional.empty(), PathHealth.problem(sysfs.paths(), single));
        assertEquals(1, PathHealth.inspect(sysfs.paths(), single).orElseThrow().serving());
        sysfs.setState("sdb", "transport-offline");
        String problem = PathHealth.problem(sysfs.paths(), single).orElseThrow();
        assertTrue(problem.contains("serves on 0 path(s)") && problem.contains("sdb is transport-offline"), problem);
        sysfs.removeDisk("sdb");
        assertTrue(PathHealth.problem(sysfs.paths(), single).orElseThrow().contains("sdb is gone"));
    }
}
