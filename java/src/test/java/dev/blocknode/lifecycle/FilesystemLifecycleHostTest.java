package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.csi.v1.VolumeUsage;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
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

/** Filesystem volumes on real loop devices: the whole lifecycle, as kubelet drives it. */
@Tag("host")
class FilesystemLifecycleHostTest {

    private static final long SIZE = 320L << 20; // xfs refuses filesystems under 300 MB

    @ParameterizedTest
    @ValueSource(strings = {"ext4", "xfs"})
    void stagesPublishesAndTearsDownAFilesystem(String fsType) throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("vol", SIZE);
            Path staging = plugin.stagingPath("vol");
            Path target = plugin.targetPath("pod-1", "vol");
            VolumeCapability cap = mount(fsType);

            plugin.client().node().nodeStageVolume(stage("vol", loop.device(), staging, cap));
            assertTrue(LinuxNative.isMountPoint(staging.toString()), "staging path is mounted");
            // Retried stage (kubelet after a timeout) is a no-op.
            plugin.client().node().nodeStageVolume(stage("vol", loop.device(), staging, cap));

            plugin.client().node().nodePublishVolume(publish("vol", staging, target, cap, false));
            assertTrue(LinuxNative.isMountPoint(target.toString()), "target is mounted");
            plugin.client().node().nodePublishVolume(publish("vol", staging, target, cap, false));

            Files.writeString(target.resolve("hello.txt"), "data written by a pod");
            assertEquals("data written by a pod", Files.readString(staging.resolve("hello.txt")),
                    "the pod's mount is the staged filesystem");

            NodeGetVolumeStatsResponse stats = plugin.client().node().nodeGetVolumeStats(NodeGetVolumeStatsRequest
                    .newBuilder().setVolumeId("vol").setVolumePath(target.toString()).build());
            VolumeUsage bytes = stats.getUsage(0);
            assertEquals(VolumeUsage.Unit.BYTES, bytes.getUnit());
            assertTrue(bytes.getTotal() > 250L << 20 && bytes.getTotal() <= SIZE, "total " + bytes.getTotal());
            assertTrue(bytes.getUsed() > 0 && bytes.getAvailable() > 0);
            assertEquals(VolumeUsage.Unit.INODES, stats.getUsage(1).getUnit());
            assertTrue(stats.getUsage(1).getUsed() > 0);
            assertFalse(stats.getVolumeCondition().getAbnormal(), stats.getVolumeCondition().getMessage());

            plugin.client().node().nodeUnpublishVolume(unpublish("vol", target));
            assertFalse(Files.exists(target), "unpublish removes the target it created");
            plugin.client().node().nodeUnpublishVolume(unpublish("vol", target)); // retry is a no-op

            plugin.client().node().nodeUnstageVolume(unstage("vol", staging));
            assertFalse(LinuxNative.isMountPoint(staging.toString()), "staging path is unmounted");
            plugin.client().node().nodeUnstageVolume(unstage("vol", staging)); // retry is a no-op
            assertTrue(Files.isDirectory(staging), "the staging directory is kubelet's and stays");
            try (var records = Files.list(plugin.stateDir().resolve("volumes"))) {
                assertEquals(0, records.count(), "the staging record is gone");
            }
        }
    }

    @Test
    void readonlyPublicationRefusesWrites() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("ro", SIZE);
            Path staging = plugin.stagingPath("ro");
            Path writable = plugin.targetPath("pod-w", "ro");
            Path readonly = plugin.targetPath("pod-r", "ro");
            VolumeCapability cap = mount("ext4");
            plugin.client().node().nodeStageVolume(stage("ro", loop.device(), staging, cap));
            plugin.client().node().nodePublishVolume(publish("ro", staging, writable, cap, false));
            plugin.client().node().nodePublishVolume(publish("ro", staging, readonly, cap, true));

            Files.writeString(writable.resolve("a"), "x");
            FileSystemException refused = assertThrows(FileSystemException.class,
                    () -> Files.writeString(readonly.resolve("b"), "x"));
            assertTrue(refused.getMessage().contains("Read-only file system") || refused instanceof AccessDeniedException,
                    refused.getMessage());
            assertEquals("x", Files.readString(readonly.resolve("a")), "the read-only view still reads");
            long flags = LinuxNative.statvfs(readonly.toString())[LinuxNative.STATVFS_FLAG];
            assertTrue((flags & LinuxNative.ST_RDONLY) != 0);
            assertFalse(plugin.client().node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                            .setVolumeId("ro").setVolumePath(readonly.toString()).build())
                    .getVolumeCondition().getAbnormal(), "read-only by request is not a fault");

            plugin.client().node().nodeUnpublishVolume(unpublish("ro", readonly));
            plugin.client().node().nodeUnpublishVolume(unpublish("ro", writable));
            plugin.client().node().nodeUnstageVolume(unstage("ro", staging));
        }
    }

    @Test
    void mountFlagsReachTheKernel() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("flags", SIZE);
            Path staging = plugin.stagingPath("flags");
            Path target = plugin.targetPath("pod", "flags");
            VolumeCapability cap = mount("ext4", VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER,
                    "noatime", "nodev,nosuid", "data=journal");
            plugin.client().node().nodeStageVolume(stage("flags", loop.device(), staging, cap));
            plugin.client().node().nodePublishVolume(publish("flags", staging, target, cap, false));
            long stagedFlags = LinuxNative.statvfs(staging.toString())[LinuxNative.STATVFS_FLAG];
            long publishedFlags = LinuxNative.statvfs(target.toString())[LinuxNative.STATVFS_FLAG];
            long stNodev = 4;
            long stNosuid = 2;
            long stNoatime = 1024;
            for (long flags : new long[]{stagedFlags, publishedFlags}) {
                assertEquals(stNodev | stNosuid | stNoatime, flags & (stNodev | stNosuid | stNoatime),
                        "flags " + Long.toBinaryString(flags));
            }
            String options = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                    .filter(l -> l.contains(" " + staging + " ")).findFirst().orElseThrow();
            assertTrue(options.contains("data=journal"), "filesystem data option applied: " + options);

            plugin.client().node().nodeUnpublishVolume(unpublish("flags", target));
            plugin.client().node().nodeUnstageVolume(unstage("flags", staging));
        }
    }

    @Test
    void aBadFilesystemOptionIsInvalidArgumentAndLeavesNothingMounted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("badopt", SIZE);
            Path staging = plugin.stagingPath("badopt");
            VolumeCapability cap = mount("ext4", VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER,
                    "no_such_ext4_option");
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodeStageVolume(stage("badopt", loop.device(), staging, cap)));
            assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.getMessage());
            assertTrue(e.getStatus().getDescription().contains("mount_flags"), e.getMessage());
            assertFalse(LinuxNative.isMountPoint(staging.toString()));
            plugin.client().node().nodeUnstageVolume(unstage("badopt", staging));
        }
    }
}
