package dev.blocknode.volume.read;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.fc.FcTransport;
import dev.blocknode.transport.local.LocalTransport;
import dev.blocknode.transport.san.LunAttacher;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The per-volume path gauges follow the records and sysfs at each refresh (each scrape). */
class VolumePathGaugesUnitTest {

    private static final String WWID = "360014052e3c1d6a5b4c34b58a1f2e3d4";

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private RecordStore store;
    private SimpleMeterRegistry registry;
    private VolumePathGauges gauges;

    @BeforeEach
    void setUp() throws Exception {
        sysfs = new FakeSysfs(Files.createDirectories(temp.resolve("host")));
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 1), "sdb", new DeviceNumber(8, 16), "naa." + WWID.substring(1));
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 1), "sdc", new DeviceNumber(8, 32), "naa." + WWID.substring(1));
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        store = new RecordStore(temp.resolve("state"));
        registry = new SimpleMeterRegistry();
        Host host = new Host(sysfs.paths(), new ScriptedCommandRunner(), new QueryOnlyMounter(),
                new RecordingBlockDevices(sysfs.paths()));
        Duration timeout = Duration.ofSeconds(1);
        FcTransport fc = new FcTransport(host, sysfs, new ManualClock().waiter(), () -> false,
                new LunAttacher.Timeouts(timeout, timeout, timeout));
        gauges = new VolumePathGauges(new Transports(List.of(new LocalTransport(host), fc)), store, registry);
    }

    private Double value(String volume, String state) {
        Gauge gauge = registry.find("blocknode_volume_paths").tags("volume_id", volume, "state", state).gauge();
        return gauge == null ? null : gauge.value();
    }

    @Test
    void rowsFollowPathStatesAndComeAndGoWithVolumes() throws Exception {
        store.save(StagingRecord.newBuilder().setVolumeId("san").setTransport(FcTransport.NAME)
                .putAttachment("wwid", WWID).putAttachment("multipathMap", "mpatha")
                .putAttachment("paths", "3:0:0:1=sdb,4:0:0:1=sdc").build());
        store.save(StagingRecord.newBuilder().setVolumeId("local-loop").setTransport(LocalTransport.NAME)
                .putAttachment("devicePath", "/dev/loop0").build());
        gauges.refresh();
        assertEquals(2.0, value("san", "serving"));
        assertEquals(0.0, value("san", "failed"));
        assertNull(value("local-loop", "serving"), "a volume without SCSI paths has no path series");

        sysfs.setState("sdc", "transport-offline");
        gauges.refresh();
        assertEquals(1.0, value("san", "serving"));
        assertEquals(1.0, value("san", "failed"));

        store.delete("san");
        gauges.refresh();
        assertNull(value("san", "serving"), "an unstaged volume's series disappear");
    }
}
