package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.CapacityRange;
import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetStorageHealthRequest;
import dev.blocknode.csi.v1.NodeGetVolumeHealthRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.VolumeHealth;
import dev.blocknode.csi.v1.VolumeHealthErrorType;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.state.RecordStore;
import dev.blocknode.testing.Capabilities;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.NodeVolumes;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.read.VolumeStats;
import dev.blocknode.volume.request.Requests;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Online growth of ext4 and xfs, and the health verdicts of NodeGetVolumeStats and NodeGetVolumeHealth. */
@Tag("host")
class ExpandAndConditionHostTest {

    private static final long SIZE = 320L << 20;

    @ParameterizedTest
    @ValueSource(strings = {"ext4", "xfs"})
    void growsAMountedFilesystemOnline(String fsType) throws Exception {
        // ext4 grows online through an ioctl that needs CAP_SYS_RESOURCE; some sandboxes drop it.
        Assumptions.assumeTrue(!fsType.equals("ext4") || Capabilities.effective().contains(Capabilities.SYS_RESOURCE),
                "ext4 online resize needs CAP_SYS_RESOURCE, which this process does not have");
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("grow", SIZE);
            Path staging = plugin.stagingPath("grow");
            Path target = plugin.targetPath("pod", "grow");
            plugin.client().node().nodeStageVolume(stage("grow", loop.device(), staging, mount(fsType)));
            plugin.client().node().nodePublishVolume(publish("grow", staging, target, mount(fsType), false));
            long before = totalBytes(plugin, target);

            NodeExpandVolumeRequest tooBig = NodeExpandVolumeRequest.newBuilder().setVolumeId("grow")
                    .setVolumePath(target.toString())
                    .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(2 * SIZE)).build();
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodeExpandVolume(tooBig));
            assertEquals(Status.Code.OUT_OF_RANGE, e.getStatus().getCode(), "the device has not grown yet");

            loop.grow(2 * SIZE);
            assertEquals(2 * SIZE, plugin.client().node().nodeExpandVolume(tooBig).getCapacityBytes());
            long after = totalBytes(plugin, target);
            assertTrue(after > before + (SIZE * 9 / 10), fsType + " grew from " + before + " to " + after);
            // Already big enough: OK again.
            assertEquals(2 * SIZE, plugin.client().node().nodeExpandVolume(tooBig).getCapacityBytes());

            plugin.client().node().nodeUnpublishVolume(unpublish("grow", target));
            plugin.client().node().nodeUnstageVolume(unstage("grow", staging));
        }
    }

    /**
     * Where the process lacks CAP_SYS_RESOURCE (this sandbox), an ext4 that already fills its device is OK (read
     * from its superblock, as resize2fs did), and one that must grow gets the kernel's EPERM back, naming it.
     */
    @Test
    void anExt4ExpandWithoutCapSysResourceSaysWhatItNeeds() throws Exception {
        Assumptions.assumeFalse(Capabilities.effective().contains(Capabilities.SYS_RESOURCE),
                "this process may resize ext4 online");
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("grow-eperm", SIZE);
            Path staging = plugin.stagingPath("grow-eperm");
            plugin.client().node().nodeStageVolume(stage("grow-eperm", loop.device(), staging, mount("ext4")));
            long before = totalBytes(plugin, staging);
            NodeExpandVolumeRequest expand = NodeExpandVolumeRequest.newBuilder().setVolumeId("grow-eperm")
                    .setVolumePath(staging.toString()).build();
            // Nothing to grow: the superblock says so and the kernel is not asked (its ioctl would be EPERM here).
            assertEquals(SIZE, plugin.client().node().nodeExpandVolume(expand).getCapacityBytes());
            loop.grow(2 * SIZE);

            StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId("grow-eperm")
                            .setVolumePath(staging.toString()).build()));

            assertEquals(Status.Code.INTERNAL, e.getStatus().getCode());
            assertTrue(e.getStatus().getDescription().contains("CAP_SYS_RESOURCE"), e.getStatus().getDescription());
            assertEquals(before, totalBytes(plugin, staging));
            plugin.client().node().nodeUnstageVolume(unstage("grow-eperm", staging));
        }
    }

    /**
     * xfs grown by descriptor (XFS_IOC_FSGROWFSDATA on the staging mount's own directory, no xfs_growfs): the
     * data section fills the grown device, what was written before is intact after a fresh mount, and
     * xfs_repair -n finds nothing wrong with the grown filesystem.
     */
    @Test
    void anXfsGrowsOnlineByDescriptorAndKeepsItsData() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("grow-xfs", SIZE);
            Path staging = plugin.stagingPath("grow-xfs");
            Path target = plugin.targetPath("pod", "grow-xfs");
            var node = plugin.client().node();
            node.nodeStageVolume(stage("grow-xfs", loop.device(), staging, mount("xfs")));
            node.nodePublishVolume(publish("grow-xfs", staging, target, mount("xfs"), false));
            byte[] data = new byte[4 << 20];
            new java.util.Random(27).nextBytes(data);
            Path file = target.resolve("data");
            try (var channel = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.CREATE_NEW,
                    java.nio.file.StandardOpenOption.WRITE)) {
                channel.write(java.nio.ByteBuffer.wrap(data));
                channel.force(true);
            }
            long before = totalBytes(plugin, target);

            loop.grow(3 * SIZE);
            NodeExpandVolumeRequest expand = NodeExpandVolumeRequest.newBuilder().setVolumeId("grow-xfs")
                    .setVolumePath(target.toString()).setStagingTargetPath(staging.toString()).build();
            assertEquals(3 * SIZE, node.nodeExpandVolume(expand).getCapacityBytes());

            long after = totalBytes(plugin, target);
            assertTrue(after > before + 2 * SIZE * 9 / 10, "xfs grew from " + before + " to " + after);
            assertEquals(after, totalBytes(plugin, staging));
            assertEquals(3 * SIZE, node.nodeExpandVolume(expand).getCapacityBytes(), "again: nothing to grow, OK");
            assertEquals(after, totalBytes(plugin, target));

            node.nodeUnpublishVolume(unpublish("grow-xfs", target));
            node.nodeUnstageVolume(unstage("grow-xfs", staging));
            var repair = new dev.blocknode.os.exec.ProcessCommandRunner().run(
                    dev.blocknode.os.exec.Command.of("xfs_repair", "-n", loop.device().toString()));
            assertEquals(0, repair.exitCode(), "xfs_repair -n of the grown filesystem: " + repair.diagnostic());
            node.nodeStageVolume(stage("grow-xfs", loop.device(), staging, mount("xfs")));
            node.nodePublishVolume(publish("grow-xfs", staging, target, mount("xfs"), false));
            assertTrue(java.util.Arrays.equals(data, java.nio.file.Files.readAllBytes(file)), "the data survived");
            assertEquals(after, totalBytes(plugin, target), "the grown size is on disk");
            node.nodeUnpublishVolume(unpublish("grow-xfs", target));
            node.nodeUnstageVolume(unstage("grow-xfs", staging));
        }
    }

    @Test
    void aFilesystemThatTurnedReadOnlyIsAbnormal() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("sick", SIZE);
            Path staging = plugin.stagingPath("sick");
            plugin.client().node().nodeStageVolume(stage("sick", loop.device(), staging, mount("ext4")));
            assertFalse(condition(plugin, staging).getAbnormal());
            // What the kernel does after I/O errors (errors=remount-ro), done by hand.
            LinuxNative.mount(null, staging.toString(), null, LinuxNative.MS_REMOUNT | LinuxNative.MS_RDONLY, null);
            var condition = condition(plugin, staging);
            assertTrue(condition.getAbnormal());
            assertTrue(condition.getMessage().contains("read-only"), condition.getMessage());
            plugin.client().node().nodeUnstageVolume(unstage("sick", staging));
        }
    }

    /**
     * The same fault through NodeGetVolumeHealth (CSI 1.13, kubelet 1.37): Degraded with the reason kubelet copies
     * into the pod's status, asked by volume id alone as csi-sanity asks; gone once the filesystem is writable
     * again; NOT_FOUND for a volume the node does not have, INVALID_ARGUMENT without a volume id.
     */
    @Test
    void aFilesystemThatTurnedReadOnlyIsDegradedInItsHealth() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("sick", SIZE);
            Path staging = plugin.stagingPath("sick");
            Path target = plugin.targetPath("pod", "sick");
            plugin.client().node().nodeStageVolume(stage("sick", loop.device(), staging, mount("ext4")));
            plugin.client().node().nodePublishVolume(publish("sick", staging, target, mount("ext4"), false));
            assertEquals(List.of(), health(plugin, "sick", target).getHealthStatusesList());

            LinuxNative.mount(null, staging.toString(), null, LinuxNative.MS_REMOUNT | LinuxNative.MS_RDONLY, null);
            VolumeHealth health = health(plugin, "sick", target);
            assertEquals("sick", health.getVolumeId());
            assertEquals(1, health.getHealthStatusesCount(), health.toString());
            assertEquals(VolumeHealthErrorType.DEGRADED, health.getHealthStatuses(0).getStatus());
            assertEquals("FilesystemReadOnly", health.getHealthStatuses(0).getReason());
            assertEquals(health, plugin.client().node().nodeGetVolumeHealth(
                    NodeGetVolumeHealthRequest.newBuilder().setVolumeId("sick").build()).getVolumeHealth());
            // Only SAN volumes count towards the storage's health; a loop device has no paths.
            assertEquals(0, plugin.client().node().nodeGetStorageHealth(
                    NodeGetStorageHealthRequest.getDefaultInstance()).getBackendHealthCount());

            LinuxNative.mount(null, staging.toString(), null, LinuxNative.MS_REMOUNT, null);
            assertEquals(List.of(), health(plugin, "sick", target).getHealthStatusesList());

            StatusRuntimeException unknown = assertThrows(StatusRuntimeException.class,
                    () -> health(plugin, "not-here", target));
            assertEquals(Status.Code.NOT_FOUND, unknown.getStatus().getCode());
            StatusRuntimeException noId = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeGetVolumeHealth(NodeGetVolumeHealthRequest.getDefaultInstance()));
            assertEquals(Status.Code.INVALID_ARGUMENT, noId.getStatus().getCode());

            plugin.client().node().nodeUnpublishVolume(unpublish("sick", target));
            plugin.client().node().nodeUnstageVolume(unstage("sick", staging));
        }
    }

    private static VolumeHealth health(PluginHarness plugin, String volumeId, Path publication) {
        return plugin.client().node().nodeGetVolumeHealth(NodeGetVolumeHealthRequest.newBuilder()
                .setVolumeId(volumeId).setVolumePublishPath(publication.toString()).build()).getVolumeHealth();
    }

    /** A device the kernel no longer has, played by pointing the sysfs seam at an empty tree. */
    @Test
    void aVanishedDeviceIsAbnormal(@TempDir Path emptySys) throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("gone", SIZE);
            Path staging = plugin.stagingPath("gone");
            plugin.client().node().nodeStageVolume(stage("gone", loop.device(), staging, mount("ext4")));

            Host real = plugin.host();
            HostPaths noDevices = new HostPaths(emptySys, real.paths().dev(), real.paths().proc(), real.paths().etc());
            Host vanished = new Host(noDevices, real.commands(), real.mounter(), new BlockDevices(noDevices));
            NodeVolumes volumes = new NodeVolumes(vanished, new KubeletPaths(plugin.kubeletRoot()),
                    new RecordStore(plugin.stateDir()), new Transports(List.of()), FilesystemType.EXT4,
                    dev.blocknode.volume.VolumeFences.Settings.of("test-node", java.time.Duration.ofSeconds(10)));
            VolumeStats stats = volumes.stats(new Requests.Stats("gone", staging.toString(), ""));
            assertTrue(stats.abnormal());
            assertTrue(stats.condition().contains("no longer present"), stats.condition());

            plugin.client().node().nodeUnstageVolume(unstage("gone", staging));
        }
    }

    private static long totalBytes(PluginHarness plugin, Path path) {
        return stats(plugin, path).getUsage(0).getTotal();
    }

    private static dev.blocknode.csi.v1.VolumeCondition condition(PluginHarness plugin, Path path) {
        return stats(plugin, path).getVolumeCondition();
    }

    private static NodeGetVolumeStatsResponse stats(PluginHarness plugin, Path path) {
        return plugin.client().node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                .setVolumeId(volumeOf(path))
                .setVolumePath(path.toString()).build());
    }

    private static String volumeOf(Path path) {
        // staging: .../csi/DRIVER/<volume>/globalmount; target: .../kubernetes.io~csi/<volume>/mount
        return path.getParent().getFileName().toString();
    }
}
