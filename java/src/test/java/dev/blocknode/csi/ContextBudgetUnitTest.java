package dev.blocknode.csi;

import dev.blocknode.csi.v1.ControllerPublishVolumeRequest;
import dev.blocknode.csi.v1.ControllerPublishVolumeResponse;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.outcome.VolumeException;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CSI spec's 4 KiB for a context, where a request enters: NodeStageVolume's publish_context and volume_context
 * (dell/csm#2012: a vendor's 5 KiB publish_context), and the controller side's volume_context. Each refusal is
 * INVALID_ARGUMENT naming the field and its size.
 */
class ContextBudgetUnitTest {

    /** A portal list that makes the entry {@code portals} {@code bytes} bytes long, key and value. */
    private static String portals(int bytes) {
        return "10.0.0.1:3260,".repeat(bytes / 14 + 1).substring(0, bytes - "portals".length());
    }

    private static VolumeCapability mount() {
        return VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build();
    }

    private static NodeStageVolumeRequest.Builder stage() {
        return NodeStageVolumeRequest.newBuilder().setVolumeId("pv-1")
                .setStagingTargetPath("/var/lib/kubelet/plugins/kubernetes.io/csi/d/h/globalmount")
                .setVolumeCapability(mount()).putVolumeContext("transport", "iscsi");
    }

    @Test
    void aStageWhosePublishContextIsOverTheSpecsLimitIsRefusedNamingItsSize() throws Exception {
        NodeService.stageRequest(stage().putPublishContext("portals", portals(4096)).build());

        VolumeException e = assertThrows(VolumeException.class, () -> NodeService.stageRequest(
                stage().putPublishContext("portals", portals(5178)).build()));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertEquals("publish_context holds 5178 bytes of keys and values; at most 4096 (the CSI spec's limit for a"
                + " map, 4 KiB)", e.getMessage());

        e = assertThrows(VolumeException.class, () -> NodeService.stageRequest(
                stage().putVolumeContext("portals", portals(4097)).build()));
        assertTrue(e.getMessage().startsWith("volume_context holds 4111 bytes"), e.getMessage());
    }

    @Test
    void theControllerSideRefusesAnOversizedVolumeContextToo() {
        ControllerPublishVolumeRequest.Builder request = ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId("pv-1").setNodeId("node-a").setVolumeCapability(mount());
        Recorded fits = publish(request.putVolumeContext("portals", portals(4096)));
        assertEquals(1, fits.answers.size(), String.valueOf(fits.error));

        Recorded over = publish(request.putVolumeContext("portals", portals(4097)));
        assertEquals(List.of(), over.answers, "refused");
        Status status = Status.fromThrowable(over.error);
        assertEquals(Status.Code.INVALID_ARGUMENT, status.getCode());
        assertEquals("volume_context holds 4097 bytes of keys and values; at most 4096 (the CSI spec's limit for a"
                + " map, 4 KiB)", status.getDescription());
    }

    private static Recorded publish(ControllerPublishVolumeRequest.Builder request) {
        Recorded recorded = new Recorded();
        new ControllerService().controllerPublishVolume(request.build(), recorded);
        return recorded;
    }

    /** What a unary call answered: its responses, or its error. */
    private static final class Recorded implements StreamObserver<ControllerPublishVolumeResponse> {

        final List<ControllerPublishVolumeResponse> answers = new ArrayList<>();
        Throwable error;

        @Override
        public void onNext(ControllerPublishVolumeResponse value) {
            answers.add(value);
        }

        @Override
        public void onError(Throwable t) {
            error = t;
        }

        @Override
        public void onCompleted() {
        }
    }
}
