package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The spec's rules for a second publish, and for unstaging a volume that is still in use. */
@Tag("host")
class PublishRulesHostTest {

    private static final long SIZE = 64L << 20;

    @Test
    void samePathWithOtherArgumentsIsAlreadyExists() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("v", SIZE);
            Path staging = plugin.stagingPath("v");
            Path target = plugin.targetPath("pod", "v");
            VolumeCapability cap = mount("ext4");
            plugin.client().node().nodeStageVolume(stage("v", loop.device(), staging, cap));
            plugin.client().node().nodePublishVolume(publish("v", staging, target, cap, false));

            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodePublishVolume(publish("v", staging, target, cap, true)));
            assertEquals(Status.Code.ALREADY_EXISTS, e.getStatus().getCode(), e.getMessage());

            VolumeCapability otherFlags = mount("ext4", Mode.SINGLE_NODE_WRITER, "noexec");
            e = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodePublishVolume(publish("v", staging, target, otherFlags, false)));
            assertEquals(Status.Code.ALREADY_EXISTS, e.getStatus().getCode(), e.getMessage());

            plugin.client().node().nodeUnpublishVolume(unpublish("v", target));
            plugin.client().node().nodeUnstageVolume(unstage("v", staging));
        }
    }

    @Test
    void singleNodeSingleWriterAllowsOnePublicationOnly() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("rwop", SIZE);
            Path staging = plugin.stagingPath("rwop");
            Path first = plugin.targetPath("pod-1", "rwop");
            Path second = plugin.targetPath("pod-2", "rwop");
            VolumeCapability cap = mount("ext4", Mode.SINGLE_NODE_SINGLE_WRITER);
            plugin.client().node().nodeStageVolume(stage("rwop", loop.device(), staging, cap));
            plugin.client().node().nodePublishVolume(publish("rwop", staging, first, cap, false));

            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodePublishVolume(publish("rwop", staging, second, cap, false)));
            assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode(), e.getMessage());
            assertFalse(Files.exists(second), "nothing created at the refused target");

            plugin.client().node().nodeUnpublishVolume(unpublish("rwop", first));
            // Once the first pod is gone, the second may have it.
            plugin.client().node().nodePublishVolume(publish("rwop", staging, second, cap, false));
            plugin.client().node().nodeUnpublishVolume(unpublish("rwop", second));
            plugin.client().node().nodeUnstageVolume(unstage("rwop", staging));
        }
    }

    @Test
    void singleNodeMultiWriterAllowsSeveralPublications() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("rwo", SIZE);
            Path staging = plugin.stagingPath("rwo");
            Path first = plugin.targetPath("pod-1", "rwo");
            Path second = plugin.targetPath("pod-2", "rwo");
            VolumeCapability cap = mount("ext4", Mode.SINGLE_NODE_MULTI_WRITER);
            plugin.client().node().nodeStageVolume(stage("rwo", loop.device(), staging, cap));
            plugin.client().node().nodePublishVolume(publish("rwo", staging, first, cap, false));
            plugin.client().node().nodePublishVolume(publish("rwo", staging, second, cap, false));
            Files.writeString(first.resolve("shared"), "both pods see this");
            assertEquals("both pods see this", Files.readString(second.resolve("shared")));

            StatusRuntimeException stillUsed = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodeUnstageVolume(unstage("rwo", staging)));
            assertEquals(Status.Code.FAILED_PRECONDITION, stillUsed.getStatus().getCode());
            assertTrue(stillUsed.getStatus().getDescription().contains(first.toString()), stillUsed.getMessage());

            plugin.client().node().nodeUnpublishVolume(unpublish("rwo", first));
            plugin.client().node().nodeUnpublishVolume(unpublish("rwo", second));
            plugin.client().node().nodeUnstageVolume(unstage("rwo", staging));
        }
    }

    @Test
    void publishBeforeStageIsFailedPrecondition() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            Path staging = plugin.stagingPath("nostage");
            Path target = plugin.targetPath("pod", "nostage");
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodePublishVolume(publish("nostage", staging, target, mount("ext4"), false)));
            assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode());
            assertFalse(Files.exists(target));
        }
    }

    @Test
    void stagingTwoVolumesAtOnePathIsAlreadyExists() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice a = plugin.newLoopDevice("a", SIZE);
            LoopDevice b = plugin.newLoopDevice("b", SIZE);
            Path staging = plugin.stagingPath("shared-path");
            plugin.client().node().nodeStageVolume(stage("a", a.device(), staging, mount("ext4")));
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodeStageVolume(stage("b", b.device(), staging, mount("ext4"))));
            assertEquals(Status.Code.ALREADY_EXISTS, e.getStatus().getCode(), e.getMessage());
            plugin.client().node().nodeUnstageVolume(unstage("b", staging)); // b was never staged: a no-op ...
            assertTrue(dev.blocknode.os.natives.LinuxNative.isMountPoint(staging.toString()),
                    "... which must not unmount a's filesystem");
            plugin.client().node().nodeUnstageVolume(unstage("a", staging));
        }
    }
}
