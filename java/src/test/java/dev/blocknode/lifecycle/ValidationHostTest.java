package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.blocknode.logging.LogCapture;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.stream.IntStream;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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

    /** A NUL in devicePath was INTERNAL (an InvalidPathException), with a SEVERE trace. */
    @Test
    void aNulInDevicePathIsInvalidArgumentNotAnInternalError() throws Exception {
        try (LogCapture log = LogCapture.installed(); PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("nul", 64L << 20);
            Path staging = plugin.stagingPath("nul");
            var node = plugin.client().node();
            assertCode(Status.Code.INVALID_ARGUMENT, "volume_context.devicePath", () -> node.nodeStageVolume(
                    stage("nul", loop.device(), staging, mount("ext4")).toBuilder()
                            .putVolumeContext("devicePath", loop.device() + "\0").build()));
            for (LogCapture.Written record : log.written()) {
                assertNotEquals(Level.SEVERE, record.level(), record.text());
                assertFalse(record.text().contains("\0"), "a raw NUL reached the log: " + record.text());
            }
            assertNeverFormatted(loop);
        }
    }

    /** 3,000 unknown mount options came back as a 93 KB status message. */
    @Test
    void thousandsOfMountOptionsAreRefusedWithAShortMessage() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("many-flags", 64L << 20);
            String[] flags = IntStream.range(0, 3000).mapToObj(i -> "unknownoption" + i).toArray(String[]::new);
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeStageVolume(stage("many-flags", loop.device(), plugin.stagingPath("many-flags"),
                            mount("ext4", Mode.SINGLE_NODE_WRITER, flags))));
            assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.getMessage());
            String description = e.getStatus().getDescription();
            assertTrue(description.contains("mount_flags") && description.contains("at most 64"), description);
            assertTrue(description.length() < 1024, "a status message of " + description.length() + " characters");
            assertNeverFormatted(loop);
        }
    }

    /** A 3.3 MiB volume_context of 20,000 keys was accepted and written into the record. */
    @Test
    void anOversizedVolumeContextIsRefusedAndNothingIsRecorded() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("big-context", 64L << 20);
            Map<String, String> padding = new HashMap<>();
            for (int i = 0; i < 20_000; i++) {
                padding.put("key" + i, "v".repeat(160));
            }
            assertCode(Status.Code.INVALID_ARGUMENT, "volume_context has 20001 entries; at most 256",
                    () -> plugin.client().node().nodeStageVolume(stage("big-context", loop.device(),
                            plugin.stagingPath("big-context"), mount("ext4")).toBuilder()
                            .putAllVolumeContext(padding).build()));
            Path records = plugin.stateDir().resolve("volumes");
            if (Files.exists(records)) {
                try (var entries = Files.list(records)) {
                    assertEquals(List.of(), entries.toList(), "nothing was recorded");
                }
            }
            assertNeverFormatted(loop);
        }
    }

    /** "nosuid;x" passed validation and reached mount(2) after a blank device was formatted. */
    @Test
    void aMalformedMountOptionIsRefusedBeforeTheDeviceIsFormatted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("semicolon", 64L << 20);
            Path staging = plugin.stagingPath("semicolon");
            assertCode(Status.Code.INVALID_ARGUMENT, "mount_flags", () -> plugin.client().node().nodeStageVolume(
                    stage("semicolon", loop.device(), staging, mount("ext4", Mode.SINGLE_NODE_WRITER, "nosuid;x"))));
            assertFalse(dev.blocknode.os.natives.LinuxNative.isMountPoint(staging.toString()));
            assertNeverFormatted(loop);
        }
    }

    /**
     * Stats and expand answer NOT_FOUND for a path outside the kubelet root, where stage
     * and publish answer INVALID_ARGUMENT. Kept on purpose: csi-sanity v5.6.0 (our conformance suite) asks
     * for NOT_FOUND when a staged and published volume's stats are asked at "some/path", and these two calls
     * only read or grow what is there. The rule, the same for both: any well-formed path that is not one of
     * the volume's is NOT_FOUND, outside the root included; a malformed one (a control character) is
     * INVALID_ARGUMENT, like every field of every call.
     */
    @Test
    void statsAndExpandAnswerNotFoundForEveryPathThatIsNotTheVolumes() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("where", 64L << 20);
            Path staging = plugin.stagingPath("where");
            var node = plugin.client().node();
            node.nodeStageVolume(stage("where", loop.device(), staging, mount("ext4")));
            try {
                for (String path : List.of("some/path", "/etc", "/tmp", plugin.kubeletRoot() + "/plugins/../../etc",
                        plugin.kubeletRoot() + "/pods/other/mount")) {
                    assertCode(Status.Code.NOT_FOUND, "is not", () -> node.nodeGetVolumeStats(
                            NodeGetVolumeStatsRequest.newBuilder().setVolumeId("where").setVolumePath(path).build()));
                    assertCode(Status.Code.NOT_FOUND, "is not", () -> node.nodeExpandVolume(
                            NodeExpandVolumeRequest.newBuilder().setVolumeId("where").setVolumePath(path).build()));
                }
                String malformed = staging + "\n";
                assertCode(Status.Code.INVALID_ARGUMENT, "volume_path holds a control", () -> node.nodeGetVolumeStats(
                        NodeGetVolumeStatsRequest.newBuilder().setVolumeId("where").setVolumePath(malformed).build()));
                assertCode(Status.Code.INVALID_ARGUMENT, "volume_path holds a control", () -> node.nodeExpandVolume(
                        NodeExpandVolumeRequest.newBuilder().setVolumeId("where").setVolumePath(malformed).build()));
            } finally {
                node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId("where")
                        .setStagingTargetPath(staging.toString()).build());
            }
        }
    }

    private static void assertNeverFormatted(LoopDevice loop) throws Exception {
        String probe = new dev.blocknode.os.exec.ProcessCommandRunner().run(dev.blocknode.os.exec.Command.of(
                "blkid", "-p", loop.device().toString())).stdout();
        assertEquals("", probe.strip(), "the device was never formatted");
    }
}
