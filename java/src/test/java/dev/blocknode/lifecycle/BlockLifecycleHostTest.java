package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.blocknode.testing.CsiRequests.block;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Raw block volumes: the device node bind-mounted onto a file the plugin creates. */
@Tag("host")
class BlockLifecycleHostTest {

    private static final long SIZE = 64L << 20;

    @Test
    void publishesTheDeviceNodeAtATargetFile() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("blk", SIZE);
            Path staging = plugin.stagingPath("blk");
            Path target = plugin.targetPath("pod", "blk");
            VolumeCapability cap = block();

            plugin.client().node().nodeStageVolume(stage("blk", loop.device(), staging, cap));
            plugin.client().node().nodeStageVolume(stage("blk", loop.device(), staging, cap));
            plugin.client().node().nodePublishVolume(publish("blk", staging, target, cap, false));
            plugin.client().node().nodePublishVolume(publish("blk", staging, target, cap, false));

            assertTrue(LinuxNative.isMountPoint(target.toString()));
            FileStat device = plugin.host().mounter().stat(loop.device());
            FileStat published = plugin.host().mounter().stat(target);
            assertTrue(published.isBlockDevice(), "the target is the device node");
            assertEquals(device.rdev(), published.rdev());

            byte[] payload = "raw bytes through the pod's device".getBytes(StandardCharsets.US_ASCII);
            try (RandomAccessFile out = new RandomAccessFile(target.toFile(), "rw")) {
                out.seek(4096);
                out.write(payload);
                out.getFD().sync();
            }
            byte[] back = new byte[payload.length];
            try (RandomAccessFile in = new RandomAccessFile(loop.device().toFile(), "r")) {
                in.seek(4096);
                in.readFully(back);
            }
            assertArrayEquals(payload, back);

            NodeGetVolumeStatsResponse stats = plugin.client().node().nodeGetVolumeStats(NodeGetVolumeStatsRequest
                    .newBuilder().setVolumeId("blk").setVolumePath(target.toString()).build());
            assertEquals(SIZE, stats.getUsage(0).getTotal());
            assertEquals(1, stats.getUsageCount(), "no inode figures for a block volume");
            assertFalse(stats.getVolumeCondition().getAbnormal());

            loop.grow(2 * SIZE);
            long capacity = plugin.client().node().nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
                    .setVolumeId("blk").setVolumePath(target.toString()).build()).getCapacityBytes();
            assertEquals(2 * SIZE, capacity);

            plugin.client().node().nodeUnpublishVolume(unpublish("blk", target));
            assertFalse(Files.exists(target), "the target file is removed");
            plugin.client().node().nodeUnstageVolume(unstage("blk", staging));
        }
    }

    /** A read-only bind of a device node still lets writes through; the plugin must give a read-only device. */
    @Test
    void aReadOnlyBlockPublicationRefusesWrites() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("roblk", SIZE);
            Path staging = plugin.stagingPath("roblk");
            Path readonly = plugin.targetPath("pod-r", "roblk");
            Path writable = plugin.targetPath("pod-w", "roblk");
            VolumeCapability cap = block(VolumeCapability.AccessMode.Mode.SINGLE_NODE_MULTI_WRITER);
            plugin.client().node().nodeStageVolume(stage("roblk", loop.device(), staging, cap));
            plugin.client().node().nodePublishVolume(publish("roblk", staging, writable, cap, false));
            plugin.client().node().nodePublishVolume(publish("roblk", staging, readonly, cap, true));
            plugin.client().node().nodePublishVolume(publish("roblk", staging, readonly, cap, true)); // retry

            byte[] payload = "written by the writer".getBytes(StandardCharsets.US_ASCII);
            try (RandomAccessFile out = new RandomAccessFile(writable.toFile(), "rw")) {
                out.write(payload);
                out.getFD().sync();
            }
            assertThrows(java.io.IOException.class, () -> {
                try (RandomAccessFile out = new RandomAccessFile(readonly.toFile(), "rw")) {
                    out.write(new byte[512]);
                    out.getFD().sync();
                }
            }, "writing through the read-only publication must fail");
            byte[] back = new byte[payload.length];
            try (RandomAccessFile in = new RandomAccessFile(readonly.toFile(), "r")) {
                in.readFully(back);
            }
            assertArrayEquals(payload, back, "the reader sees the writer's data");
            assertEquals(1, dev.blocknode.testing.HostAssertions.loopDevicesBackedUnder(loop.device()).size(),
                    "one read-only view over the volume's device");

            plugin.client().node().nodeUnpublishVolume(unpublish("roblk", readonly));
            assertEquals(0, dev.blocknode.testing.HostAssertions.loopDevicesBackedUnder(loop.device()).size(),
                    "the read-only view is detached on unpublish");
            plugin.client().node().nodeUnpublishVolume(unpublish("roblk", writable));
            plugin.client().node().nodeUnstageVolume(unstage("roblk", staging));
        }
    }

    @Test
    void blockVolumesAreNeverFormatted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("raw", SIZE);
            Path staging = plugin.stagingPath("raw");
            plugin.client().node().nodeStageVolume(stage("raw", loop.device(), staging, block()));
            byte[] head = new byte[1 << 16];
            try (RandomAccessFile in = new RandomAccessFile(loop.device().toFile(), "r")) {
                in.readFully(head);
            }
            assertArrayEquals(new byte[1 << 16], head, "the device is still blank");
            plugin.client().node().nodeUnstageVolume(unstage("raw", staging));
        }
    }
}
