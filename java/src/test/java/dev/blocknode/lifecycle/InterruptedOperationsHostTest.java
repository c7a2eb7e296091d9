package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.CrashScenario;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.PluginHarness;
import dev.blocknode.testing.PluginProcess;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Calls cut short: by the plugin's death inside an attach, by a refused attach, by the caller's deadline. */
@Tag("host")
class InterruptedOperationsHostTest {

    private static final String SECRET = "never-recorded-7f3a";
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void anAttachCutShortIsRecordedWithoutSecretsAndUndoneByUnstage() throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            NodeStageVolumeRequest request = stage(CrashScenario.FS, scenario.fsDevice(), scenario.fsStaging(),
                    mount("xfs")).toBuilder().putSecrets("password", SECRET).build();
            try (PluginProcess doomed = PluginProcess.start(scenario.dir(),
                    Map.of(CrashPoints.CRASH_AT, CrashPoint.STAGE_INTENT_RECORDED.step()))) {
                StatusRuntimeException died = assertThrows(StatusRuntimeException.class,
                        () -> doomed.client().node().nodeStageVolume(request));
                assertEquals(Status.Code.UNAVAILABLE, died.getStatus().getCode());
                assertEquals(CrashPoints.EXIT_CODE, doomed.awaitExit(WAIT));
            }
            RecordStore store = new RecordStore(scenario.dir().resolve("state"));
            StagingRecord intent = store.load(CrashScenario.FS).orElseThrow();
            assertEquals(StagePhase.ATTACHING, intent.getPhase());
            assertEquals("local", intent.getTransport());
            assertEquals(scenario.fsDevice().toString(), intent.getVolumeContextMap().get("devicePath"));
            assertFalse(intent.hasDevice(), "no device is known before the attach");
            assertNoFileUnder(scenario.dir().resolve("state"), SECRET);

            try (PluginProcess restarted = PluginProcess.start(scenario.dir(), Map.of())) {
                restarted.awaitLine(line -> line.contains("volume " + CrashScenario.FS + " was left ATTACHING"), WAIT);
                // Undone at start, before the socket opened (kubelet may never come back for a failed stage).
                restarted.awaitLine(line -> line.contains("startup: finished the interrupted attach of volume "
                        + CrashScenario.FS), WAIT);
                assertEquals(java.util.Optional.empty(), new RecordStore(scenario.dir().resolve("state"))
                        .load(CrashScenario.FS), "the ATTACHING record is gone once the plugin serves");
                StatusRuntimeException notStaged = assertThrows(StatusRuntimeException.class,
                        () -> restarted.client().node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                                .setVolumeId(CrashScenario.FS).setVolumePath(scenario.fsStaging().toString()).build()));
                assertEquals(Status.Code.NOT_FOUND, notStaged.getStatus().getCode());
                restarted.client().node().nodeUnstageVolume(unstage(CrashScenario.FS, scenario.fsStaging()));
                restarted.awaitLine(line -> line.contains("undid its interrupted attach"), WAIT);
            }
            // A store reads the directory when it opens (then serves from memory): open it again to see disk.
            assertEquals(List.of(), new RecordStore(scenario.dir().resolve("state")).all());
            HostAssertions.assertNoMountsUnder(scenario.dir());
        }
    }

    @Test
    void anAttachTheTransportRefusesLeavesNoRecord() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            Path staging = plugin.stagingPath("missing");
            StatusRuntimeException refused = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodeStageVolume(stage("missing",
                            Path.of("/dev/blocknode-no-such-disk"), staging, mount("ext4"))));
            assertEquals(Status.Code.NOT_FOUND, refused.getStatus().getCode());
            assertEquals(List.of(), new RecordStore(plugin.stateDir()).all(), "a refused attach is not remembered");
        }
    }

    /**
     * The caller gives up (kubelet's deadline passed) while mkfs has run and the mount has not (held there by
     * a pause standing in for a slow step): the work goes on after the caller left, a retry meanwhile is
     * ABORTED, and the retry after it is answered
     * from what was done (no second mkfs, one mount).
     */
    @Test
    void anOperationThatOutlivesItsCallCompletesAndTheRetrySeesItsOutcome() throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            Path gate = scenario.dir().resolve("gate");
            new ProcessCommandRunner().runChecked(Command.of("mkfifo", gate.toString()));
            NodeStageVolumeRequest request = stage(CrashScenario.FS, scenario.fsDevice(), scenario.fsStaging(),
                    mount("xfs"));
            try (PluginProcess plugin = PluginProcess.start(scenario.dir(), Map.of(
                    CrashPoints.PAUSE_AT, CrashPoint.STAGE_FORMATTED.step(),
                    CrashPoints.PAUSE_GATE, gate.toString()))) {
                // The caller gives up once the work is under way (as at kubelet's deadline: the server sees the
                // call cancelled either way; a cancel, unlike a short deadline, cannot come before the work starts).
                Context.CancellableContext caller = Context.current().withCancellation();
                CompletableFuture<Void> call = CompletableFuture.runAsync(
                        caller.wrap((Runnable) () -> plugin.client().node().nodeStageVolume(request)),
                        Thread::startVirtualThread);
                plugin.awaitLine(line -> line.contains("crash point " + CrashPoint.STAGE_FORMATTED
                        + " reached: pausing"), WAIT);
                caller.cancel(null);
                ExecutionException gaveUp = assertThrows(ExecutionException.class,
                        () -> call.get(30, TimeUnit.SECONDS));
                assertEquals(Status.Code.CANCELLED, Status.fromThrowable(gaveUp.getCause()).getCode());

                StatusRuntimeException busy = assertThrows(StatusRuntimeException.class,
                        () -> plugin.client().node().nodeStageVolume(request));
                assertEquals(Status.Code.ABORTED, busy.getStatus().getCode(), busy.getStatus().toString());
                assertTrue(busy.getStatus().getDescription().contains("already in progress"));

                try (OutputStream open = Files.newOutputStream(gate)) {
                    open.write('\n'); // the slow step ends
                }
                plugin.awaitLine(line -> line.contains("staged volume " + CrashScenario.FS), WAIT);
                plugin.client().node().nodeStageVolume(request);
                assertEquals(1, plugin.output().stream()
                        .filter(line -> line.contains("formatted blank device")).count(), "mkfs ran once");
                assertEquals(1, HostAssertions.mountsUnder(scenario.dir()).stream()
                        .filter(scenario.fsStaging()::equals).count(), "one mount at the staging path");
                assertEquals(StagePhase.STAGED, new RecordStore(scenario.dir().resolve("state"))
                        .load(CrashScenario.FS).orElseThrow().getPhase());

                plugin.client().node().nodeUnstageVolume(unstage(CrashScenario.FS, scenario.fsStaging()));
                assertFalse(plugin.output().stream().anyMatch(line -> line.contains("Exception")),
                        "answering a call whose caller left must not fail: " + plugin.output());
            }
            assertEquals(List.of(), new RecordStore(scenario.dir().resolve("state")).all());
            HostAssertions.assertNoMountsUnder(scenario.dir());
        }
    }

    /**
     * The plugin died in a teardown (staging path unmounted, record UNSTAGING): kubelet, restarted too, finds
     * no mount and may never ask again, so the restarted plugin finishes the teardown before it serves.
     */
    @Test
    void aTeardownCutShortIsFinishedAtStart() throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            try (PluginProcess doomed = PluginProcess.start(scenario.dir(),
                    Map.of(CrashPoints.CRASH_AT, CrashPoint.UNSTAGE_UNMOUNTED.step()))) {
                doomed.client().node().nodeStageVolume(stage(CrashScenario.FS, scenario.fsDevice(),
                        scenario.fsStaging(), mount("xfs")));
                StatusRuntimeException died = assertThrows(StatusRuntimeException.class, () -> doomed.client().node()
                        .nodeUnstageVolume(unstage(CrashScenario.FS, scenario.fsStaging())));
                assertEquals(Status.Code.UNAVAILABLE, died.getStatus().getCode());
                assertEquals(CrashPoints.EXIT_CODE, doomed.awaitExit(WAIT));
            }
            assertEquals(StagePhase.UNSTAGING, new RecordStore(scenario.dir().resolve("state"))
                    .load(CrashScenario.FS).orElseThrow().getPhase());

            try (PluginProcess restarted = PluginProcess.start(scenario.dir(), Map.of())) {
                restarted.awaitLine(line -> line.contains("startup: finished the interrupted teardown of volume "
                        + CrashScenario.FS), WAIT);
                assertEquals(List.of(), new RecordStore(scenario.dir().resolve("state")).all(),
                        "the teardown is finished before the plugin serves");
                // kubelet's retry, if it comes, finds nothing left to do.
                restarted.client().node().nodeUnstageVolume(unstage(CrashScenario.FS, scenario.fsStaging()));
            }
            HostAssertions.assertNoMountsUnder(scenario.dir());
        }
    }

    private static void assertNoFileUnder(Path dir, String secret) throws Exception {
        byte[] needle = secret.getBytes(StandardCharsets.UTF_8);
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                String content = new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1);
                assertFalse(content.contains(new String(needle, StandardCharsets.ISO_8859_1)),
                        "the secret is in " + file);
            }
        }
    }
}
