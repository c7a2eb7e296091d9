package dev.blocknode.lifecycle;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.testing.CrashScenario;
import dev.blocknode.testing.PluginProcess;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.blocknode.testing.CsiRequests.block;
import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The crash matrix of the local transport: for every {@link CrashPoint}, the real plugin (a child process)
 * runs a kubelet-like lifecycle of a filesystem volume and a read-only block volume until it is killed at
 * that point, is started again, and kubelet's retry of the interrupted call and the rest of the lifecycle
 * must succeed and leave the node exactly clean: data intact, no mount, no loop device, no record.
 */
@Tag("host")
class CrashMatrixHostTest {

    private static final Duration CALL_DEADLINE = Duration.ofSeconds(60);

    /** One step of the lifecycle: a CSI call as kubelet makes it, or what a pod or the storage does between. */
    private record Step(String name, Body body) {
    }

    @FunctionalInterface
    private interface Body {
        void run(NodeGrpc.NodeBlockingStub node) throws Exception;
    }

    /**
     * Every point but an encrypted volume's (its LUKS2 steps need dm-crypt, which the host tier's kernel may lack):
     * the VM tier's iscsi-crash runs those over a real dm-crypt mapping.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = CrashPoint.class, mode = EnumSource.Mode.MATCH_NONE, names = ".*_CRYPT_.*")
    void convergesAfterACrashAt(CrashPoint point) throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            List<Step> steps = lifecycle(scenario);
            int interrupted;
            try (PluginProcess doomed = PluginProcess.start(scenario.dir(),
                    Map.of(CrashPoints.CRASH_AT, point.step()))) {
                interrupted = runUntilKilled(doomed, steps, point);
                assertEquals(CrashPoints.EXIT_CODE, doomed.awaitExit(Duration.ofSeconds(10)),
                        "the plugin must have died at the crash point, not otherwise");
                doomed.awaitLine(line -> line.contains("crash point " + point + " reached"), Duration.ofSeconds(5));
            }
            try (PluginProcess restarted = PluginProcess.start(scenario.dir(), Map.of())) {
                for (Step step : steps.subList(interrupted, steps.size())) {
                    run(step, restarted.client());
                }
            }
            scenario.assertConverged();
        }
    }

    /**
     * A read-only block publish that died after it recorded or attached its loop device view, and that kubelet
     * then forgot (it goes straight to NodeUnstageVolume, as after a kubelet restart that lost the uncertain
     * publication): unstage still releases the view, which would otherwise hold the volume's device open.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = CrashPoint.class, names = {"PUBLISH_VIEW_RECORDED", "PUBLISH_VIEW_ATTACHED"})
    void unstageReleasesTheViewOfAPublishThatDiedAndWasNeverUnpublished(CrashPoint point) throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            List<Step> steps = List.of(
                    new Step("NodeStageVolume blk", node -> node.nodeStageVolume(
                            stage(CrashScenario.BLOCK, scenario.blockDevice(), scenario.blockStaging(), block()))),
                    new Step("NodePublishVolume blk read-only", node -> node.nodePublishVolume(
                            publish(CrashScenario.BLOCK, scenario.blockStaging(), scenario.blockTarget(), block(),
                                    true))));
            try (PluginProcess doomed = PluginProcess.start(scenario.dir(),
                    Map.of(CrashPoints.CRASH_AT, point.step()))) {
                assertEquals(1, runUntilKilled(doomed, steps, point), "died in the publish");
                assertEquals(CrashPoints.EXIT_CODE, doomed.awaitExit(Duration.ofSeconds(10)));
            }
            try (PluginProcess restarted = PluginProcess.start(scenario.dir(), Map.of())) {
                run(new Step("NodeUnstageVolume blk", node -> node.nodeUnstageVolume(
                        unstage(CrashScenario.BLOCK, scenario.blockStaging()))), restarted.client());
            }
            scenario.assertNothingLeft();
        }
    }

    /**
     * A block stage that died once its STAGING record named the device (or later): after the restart the record
     * still claims the device, so another volume's stage on it is refused, and kubelet's retry of the stage and
     * the rest of the lifecycle converge.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = CrashPoint.class, names = {"STAGE_ATTACHED", "STAGE_RECORDED", "STAGE_STAGED"})
    void aBlockStageThatDiedHoldsItsDeviceAndItsRetryConverges(CrashPoint point) throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            Step stageBlock = new Step("NodeStageVolume blk", node -> node.nodeStageVolume(
                    stage(CrashScenario.BLOCK, scenario.blockDevice(), scenario.blockStaging(), block())));
            try (PluginProcess doomed = PluginProcess.start(scenario.dir(),
                    Map.of(CrashPoints.CRASH_AT, point.step()))) {
                assertEquals(0, runUntilKilled(doomed, List.of(stageBlock), point), "died in the stage");
                assertEquals(CrashPoints.EXIT_CODE, doomed.awaitExit(Duration.ofSeconds(10)));
            }
            try (PluginProcess restarted = PluginProcess.start(scenario.dir(), Map.of())) {
                NodeGrpc.NodeBlockingStub node = restarted.client().node();
                java.nio.file.Path otherStaging = scenario.dir().resolve("kubelet/other-staging");
                java.nio.file.Files.createDirectories(otherStaging);
                if (point != CrashPoint.STAGE_ATTACHED) { // an ATTACHING record named no device, and is undone at start
                    StatusRuntimeException refused = org.junit.jupiter.api.Assertions.assertThrows(
                            StatusRuntimeException.class, () -> node.nodeStageVolume(
                                    stage("other", scenario.blockDevice(), otherStaging, block())));
                    assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
                }
                run(stageBlock, restarted.client());
                run(new Step("NodePublishVolume blk read-only", n -> n.nodePublishVolume(publish(CrashScenario.BLOCK,
                        scenario.blockStaging(), scenario.blockTarget(), block(), true))), restarted.client());
                run(new Step("NodeUnpublishVolume blk", n -> n.nodeUnpublishVolume(
                        unpublish(CrashScenario.BLOCK, scenario.blockTarget()))), restarted.client());
                run(new Step("NodeUnstageVolume blk", n -> n.nodeUnstageVolume(
                        unstage(CrashScenario.BLOCK, scenario.blockStaging()))), restarted.client());
                run(new Step("NodeUnstageVolume other", n -> n.nodeUnstageVolume(
                        unstage("other", otherStaging))), restarted.client());
            }
            scenario.assertNothingLeft();
        }
    }

    /** Runs the steps until the plugin dies; returns the index of the call it died in. */
    private static int runUntilKilled(PluginProcess doomed, List<Step> steps, CrashPoint point) throws Exception {
        for (int i = 0; i < steps.size(); i++) {
            try {
                run(steps.get(i), doomed.client());
            } catch (StatusRuntimeException e) {
                if (e.getStatus().getCode() == Status.Code.UNAVAILABLE && doomed.endsWithin(Duration.ofSeconds(10))) {
                    return i;
                }
                throw e;
            }
        }
        fail("the lifecycle never reached crash point " + point + " (a step that no code reaches any more?)");
        return -1;
    }

    private static void run(Step step, CsiClient client) throws Exception {
        try {
            step.body().run(client.node().withDeadlineAfter(CALL_DEADLINE.toMillis(), TimeUnit.MILLISECONDS));
        } catch (StatusRuntimeException e) {
            throw new StatusRuntimeException(e.getStatus().augmentDescription("in step \"" + step.name() + "\""));
        }
    }

    /**
     * kubelet's order for two volumes on one node: stage and publish a filesystem volume, the pod writes,
     * the volume grows; stage and publish a block volume read-only; then tear both down. Every crash point
     * is reached first by one of these calls.
     */
    private static List<Step> lifecycle(CrashScenario s) {
        VolumeCapability xfs = mount("xfs");
        return List.of(
                new Step("NodeStageVolume fs", node -> node.nodeStageVolume(
                        stage(CrashScenario.FS, s.fsDevice(), s.fsStaging(), xfs))),
                new Step("NodePublishVolume fs", node -> node.nodePublishVolume(
                        publish(CrashScenario.FS, s.fsStaging(), s.fsTarget(), xfs, false))),
                new Step("the pod writes its data", node -> s.writeData()),
                new Step("the storage grows the fs volume", node -> s.growFsDevice()),
                new Step("NodeExpandVolume fs", node -> assertEquals(CrashScenario.FS_GROWN, node.nodeExpandVolume(
                        NodeExpandVolumeRequest.newBuilder().setVolumeId(CrashScenario.FS)
                                .setVolumePath(s.fsTarget().toString()).build()).getCapacityBytes())),
                new Step("NodeStageVolume blk", node -> node.nodeStageVolume(
                        stage(CrashScenario.BLOCK, s.blockDevice(), s.blockStaging(), block()))),
                new Step("NodePublishVolume blk read-only", node -> node.nodePublishVolume(
                        publish(CrashScenario.BLOCK, s.blockStaging(), s.blockTarget(), block(), true))),
                new Step("both volumes are in place once, data intact", node -> s.assertPublished()),
                new Step("NodeUnpublishVolume fs", node -> node.nodeUnpublishVolume(
                        unpublish(CrashScenario.FS, s.fsTarget()))),
                new Step("NodeUnstageVolume fs", node -> node.nodeUnstageVolume(
                        unstage(CrashScenario.FS, s.fsStaging()))),
                new Step("NodeUnpublishVolume blk", node -> node.nodeUnpublishVolume(
                        unpublish(CrashScenario.BLOCK, s.blockTarget()))),
                new Step("NodeUnstageVolume blk", node -> node.nodeUnstageVolume(
                        unstage(CrashScenario.BLOCK, s.blockStaging()))));
    }
}
