package dev.blocknode.lifecycle;

import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.CrashScenario;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.PluginProcess;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Unstage, and the start-up recovery that runs it, take down only what is the volume's own:
 * a record that claims another volume's staging path and device (forged here, written through RecordStore as
 * the state dir holds it) is refused, FAILED_PRECONDITION naming the other volume, and that volume stays
 * staged and published with its data.
 */
@Tag("host")
class UnstageOwnershipHostTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String FORGED = "forged";

    @Test
    void aRecordClaimingAnotherVolumesStagingPathAndDeviceUnmountsNothing() throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            Path state = scenario.dir().resolve("state");
            Path data = scenario.fsTarget().resolve("owner");
            try (PluginProcess plugin = PluginProcess.start(scenario.dir(), Map.of())) {
                plugin.client().node().nodeStageVolume(stage(CrashScenario.FS, scenario.fsDevice(),
                        scenario.fsStaging(), mount("xfs")));
                plugin.client().node().nodePublishVolume(publish(CrashScenario.FS, scenario.fsStaging(),
                        scenario.fsTarget(), mount("xfs"), false));
                Files.writeString(data, "the real volume's data");
            }
            StagingRecord real = new RecordStore(state).load(CrashScenario.FS).orElseThrow();
            new RecordStore(state).save(real.toBuilder().setVolumeId(FORGED).setPhase(StagePhase.UNSTAGING)
                    .clearPublications().build());

            try (PluginProcess restarted = PluginProcess.start(scenario.dir(), Map.of())) {
                String line = restarted.awaitLine(l -> l.contains("startup: could not finish the interrupted "
                        + "teardown of volume " + FORGED), WAIT);
                assertStillStagedAndPublished(scenario, data);
                assertTrue(line.contains("volume " + CrashScenario.FS), "names the owner: " + line);

                StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> restarted.client()
                        .node().nodeUnstageVolume(unstage(FORGED, scenario.fsStaging())));
                assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
                assertTrue(refused.getStatus().getDescription().contains("volume " + CrashScenario.FS),
                        refused.getMessage());
                assertStillStagedAndPublished(scenario, data);
            }
            assertEquals(StagePhase.UNSTAGING, new RecordStore(state).load(FORGED).orElseThrow().getPhase(),
                    "the refused record is left as it was, for an operator");

            new RecordStore(state).delete(FORGED); // the operator removes the forged record
            try (PluginProcess restarted = PluginProcess.start(scenario.dir(), Map.of())) {
                restarted.client().node().nodeUnpublishVolume(unpublish(CrashScenario.FS, scenario.fsTarget()));
                restarted.client().node().nodeUnstageVolume(unstage(CrashScenario.FS, scenario.fsStaging()));
            }
            HostAssertions.assertNoMountsUnder(scenario.dir());
            assertEquals(List.of(), new RecordStore(state).all());
        }
    }

    private static void assertStillStagedAndPublished(CrashScenario scenario, Path data) throws Exception {
        List<Path> mounts = HostAssertions.mountsUnder(scenario.dir());
        assertTrue(mounts.contains(scenario.fsStaging()), "the staging mount stays: " + mounts);
        assertTrue(mounts.contains(scenario.fsTarget()), "the publication stays: " + mounts);
        assertEquals("the real volume's data", Files.readString(data));
        assertEquals("the real volume's data", Files.readString(scenario.fsStaging().resolve("owner")));
    }
}
