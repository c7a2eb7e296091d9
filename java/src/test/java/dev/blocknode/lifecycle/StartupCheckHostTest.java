package dev.blocknode.lifecycle;

import dev.blocknode.os.host.Host;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import dev.blocknode.volume.StartupCheck;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a restarted plugin reports about the records it finds. */
@Tag("host")
class StartupCheckHostTest {

    @Test
    void reportsHealthyHalfDoneAndStaleRecords() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("ok", 64L << 20);
            Path staging = plugin.stagingPath("ok");
            plugin.client().node().nodeStageVolume(stage("ok", loop.device(), staging, mount("ext4")));
            RecordStore store = new RecordStore(plugin.stateDir());
            StagingRecord healthy = store.load("ok").orElseThrow();
            store.save(healthy.toBuilder().setVolumeId("half").setPhase(StagePhase.STAGING).build());
            store.save(healthy.toBuilder().setVolumeId("stale")
                    .setStagingPath(plugin.stagingPath("stale").toString()).build());
            store.save(healthy.toBuilder().setVolumeId("attaching").setPhase(StagePhase.ATTACHING).clearDevice()
                    .setStagingPath(plugin.stagingPath("attaching").toString()).build());

            StartupCheck.Report report = new StartupCheck(Host.real(), store).run();
            assertEquals(4, report.records());
            assertEquals(1, report.healthy());
            assertEquals(2, report.halfDone());
            assertEquals(java.util.List.of("attaching"),
                    report.interrupted().stream().map(StagingRecord::getVolumeId).toList(),
                    "ATTACHING and UNSTAGING records are the ones recovered at start; STAGING waits for kubelet");
            assertEquals(1, report.stale());
            assertTrue(report.findings().stream().anyMatch(f -> f.startsWith("volume stale is recorded as staged but "
                    + "its staging path")), report.findings().toString());
            assertTrue(report.findings().stream().anyMatch(f -> f.startsWith("volume attaching was left ATTACHING by"
                    + " an interrupted call: the local transport may have attached")), report.findings().toString());

            store.delete("attaching");
            store.delete("half");
            store.delete("stale");
            plugin.client().node().nodeUnstageVolume(unstage("ok", staging));
        }
    }
}
