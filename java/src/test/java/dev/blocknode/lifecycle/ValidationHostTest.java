package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.nio.file.Files;
import java.nio.file.Path;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad input gets the spec's code and a message naming the field; nothing is mounted or formatted. */
@Tag("host")
class ValidationHostTest {

    private static void assertCode(Status.Code code, String mentions, Executable call) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call);
        assertEquals(code, e.getStatus().getCode(), e.getMessage());
        assertTrue(e.getStatus().getDescription().contains(mentions),
                "message should mention " + mentions + ": " + e.getStatus().getDescription());
    }

    @Test
    void missingFieldsAreNamed() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            var node = plugin.client().node();
            Path staging = plugin.stagingPath("v");
            assertCode(Status.Code.INVALID_ARGUMENT, "volume_id",
                    () -> node.nodeStageVolume(NodeStageVolumeRequest.getDefaultInstance()));
            assertCode(Status.Code.INVALID_ARGUMENT, "staging_target_path",
                    () -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId("v").build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "volume_capability", () -> node.nodeStageVolume(
                    NodeStageVolumeRequest.newBuilder().setVolumeId("v").setStagingTargetPath(staging.toString()).build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "access_type", () -> node.nodeStageVolume(
                    NodeStageVolumeRequest.newBuilder().setVolumeId("v").setStagingTargetPath(staging.toString())
                            .setVolumeCapability(VolumeCapability.newBuilder().setAccessMode(
                                    VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER)))
                            .build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "access_mode", () -> node.nodeStageVolume(
                    NodeStageVolumeRequest.newBuilder().setVolumeId("v").setStagingTargetPath(staging.toString())
                            .setVolumeCapability(VolumeCapability.newBuilder()
                                    .setMount(VolumeCapability.MountVolume.getDefaultInstance())).build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "devicePath", () -> node.nodeStageVolume(
                    NodeStageVolumeRequest.newBuilder().setVolumeId("v").setStagingTargetPath(staging.toString())
                            .setVolumeCapability(mount("ext4")).build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "target_path", () -> node.nodePublishVolume(
                    NodePublishVolumeRequest.newBuilder().setVolumeId("v").build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "staging_target_path", () -> node.nodePublishVolume(
                    NodePublishVolumeRequest.newBuilder().setVolumeId("v").setTargetPath(staging + "/x")
                            .setVolumeCapability(mount("ext4")).build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "volume_id",
                    () -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.getDefaultInstance()));
            assertCode(Status.Code.INVALID_ARGUMENT, "target_path",
                    () -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId("v").build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "staging_target_path",
                    () -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId("v").build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "volume_path", () -> node.nodeGetVolumeStats(
                    NodeGetVolumeStatsRequest.newBuilder().setVolumeId("v").build()));
            assertCode(Status.Code.INVALID_ARGUMENT, "volume_path", () -> node.nodeExpandVolume(
                    NodeExpandVolumeRequest.newBuilder().setVolumeId("v").build()));
            assertCode(Status.Code.NOT_FOUND, "not staged", () -> node.nodeGetVolumeStats(
                    NodeGetVolumeStatsRequest.newBuilder().setVolumeId("v").setVolumePath("some/path").build()));
            assertCode(Status.Code.NOT_FOUND, "not staged", () -> node.nodeExpandVolume(
                    NodeExpandVolumeRequest.newBuilder().setVolumeId("v").setVolumePath("some/path").build()));
        }
    }

    @Test
    void badCapabilitiesAreRefusedBeforeTheDeviceIsTouched() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("cap", 64L << 20);
            Path staging = plugin.stagingPath("cap");
            var node = plugin.client().node();
            assertCode(Status.Code.INVALID_ARGUMENT, "fs_type",
                    () -> node.nodeStageVolume(stage("cap", loop.device(), staging, mount("ntfs"))));
            assertCode(Status.Code.INVALID_ARGUMENT, "MULTI_NODE_MULTI_WRITER", () -> node.nodeStageVolume(
                    stage("cap", loop.device(), staging, mount("ext4", Mode.MULTI_NODE_MULTI_WRITER))));
            assertCode(Status.Code.INVALID_ARGUMENT, "mount_flags", () -> node.nodeStageVolume(
                    stage("cap", loop.device(), staging, mount("ext4", Mode.SINGLE_NODE_WRITER, "bind"))));
            assertCode(Status.Code.INVALID_ARGUMENT, "mount_flags", () -> node.nodeStageVolume(
                    stage("cap", loop.device(), staging, mount("ext4", Mode.SINGLE_NODE_WRITER, "ro nodev"))));
            assertCode(Status.Code.INVALID_ARGUMENT, "devicePath", () -> node.nodeStageVolume(
                    stage("cap", Path.of("/etc/passwd"), staging, mount("ext4"))));
            assertCode(Status.Code.NOT_FOUND, "does not exist", () -> node.nodeStageVolume(
                    stage("cap", Path.of("/dev/no-such-device"), staging, mount("ext4"))));
            assertCode(Status.Code.INVALID_ARGUMENT, "not a block device", () -> node.nodeStageVolume(
                    stage("cap", Path.of("/dev/null"), staging, mount("ext4"))));
            assertFalse(dev.blocknode.os.natives.LinuxNative.isMountPoint(staging.toString()));
            String probe = new dev.blocknode.os.exec.ProcessCommandRunner().run(dev.blocknode.os.exec.Command.of(
                    "blkid", "-p", loop.device().toString())).stdout();
            assertEquals("", probe.strip(), "the device was never formatted");
        }
    }

    @Test
    void pathsOutsideTheKubeletRootAreRefused() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("esc", 64L << 20);
            var node = plugin.client().node();
            Path outside = Files.createTempDirectory("bn-outside-");
            try {
                Path link = plugin.kubeletRoot().resolve("plugins/escape");
                Files.createDirectories(link.getParent());
                Files.createSymbolicLink(link, outside);
                assertCode(Status.Code.INVALID_ARGUMENT, "outside the kubelet root",
                        () -> node.nodeStageVolume(stage("esc", loop.device(), outside, mount("ext4"))));
                assertCode(Status.Code.INVALID_ARGUMENT, "symlink",
                        () -> node.nodeStageVolume(stage("esc", loop.device(), link.resolve("globalmount"),
                                mount("ext4"))));
                assertCode(Status.Code.INVALID_ARGUMENT, "..", () -> node.nodeStageVolume(stage("esc", loop.device(),
                        Path.of(plugin.kubeletRoot() + "/plugins/../../../etc"), mount("ext4"))));
                assertCode(Status.Code.INVALID_ARGUMENT, "absolute",
                        () -> node.nodeStageVolume(stage("esc", loop.device(), Path.of("relative/dir"), mount("ext4"))));
                assertCode(Status.Code.INVALID_ARGUMENT, "outside the kubelet root", () -> node.nodePublishVolume(
                        publish("esc", plugin.stagingPath("esc"), outside.resolve("t"), mount("ext4"), false)));
                assertCode(Status.Code.INVALID_ARGUMENT, "outside the kubelet root", () -> node.nodeUnpublishVolume(
                        NodeUnpublishVolumeRequest.newBuilder().setVolumeId("esc").setTargetPath("/etc").build()));
                try (var entries = Files.list(outside)) {
                    assertEquals(0, entries.count(), "nothing created outside the root");
                }
                HostAssertions.assertNoMountsUnder(outside);
            } finally {
                Files.deleteIfExists(outside);
            }
        }
    }
}
