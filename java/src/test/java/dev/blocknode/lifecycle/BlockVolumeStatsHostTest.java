package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.mount.Mounter;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static dev.blocknode.testing.CsiRequests.block;
import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodeGetVolumeStats of a raw block volume where kubelet asks for it: not the target it published but its own
 * bind of it, {@code plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/<pod uid>} (kubelet's csi_plugin.go,
 * NewBlockVolumeMapper; made by util.MapBlockVolume). Laid out and bound here as kubelet does: an empty file,
 * and the publish target bind-mounted onto it. Found by the device number of the node, never by its name.
 */
@Tag("host")
class BlockVolumeStatsHostTest {

    private static final long SIZE = 64L << 20;

    @Test
    void aBlockVolumeAnswersAtKubeletsBindOfItsPublishedDeviceAndOnlyThere() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("blk", SIZE);
            LoopDevice other = plugin.newLoopDevice("fs", SIZE);
            Path devices = plugin.kubeletRoot().resolve("plugins/kubernetes.io/csi/volumeDevices");
            Path staging = Files.createDirectories(devices.resolve("staging/blk"));
            Path writable = Files.createDirectories(devices.resolve("publish/blk")).resolve("pod-w");
            Path readonly = devices.resolve("publish/blk/pod-r");
            Path fsStaging = plugin.stagingPath("fs");
            VolumeCapability cap = block(VolumeCapability.AccessMode.Mode.SINGLE_NODE_MULTI_WRITER);
            var node = plugin.client().node();
            node.nodeStageVolume(stage("blk", loop.device(), staging, cap));
            node.nodePublishVolume(publish("blk", staging, writable, cap, false));
            node.nodePublishVolume(publish("blk", staging, readonly, cap, true));
            node.nodeStageVolume(stage("fs", other.device(), fsStaging, mount("ext4")));
            Mounter mounter = plugin.host().mounter();
            List<Path> binds = new ArrayList<>();
            try {
                Path links = devices.resolve("blk/dev");
                Path podW = kubeletBind(mounter, binds, writable, links.resolve("pod-w"));
                Path podR = kubeletBind(mounter, binds, readonly, links.resolve("pod-r"));
                assertEquals(mounter.stat(loop.device()).rdev(), mounter.stat(podW).rdev(), "pod-w shows the device");

                for (Path link : List.of(podW, podR)) {
                    NodeGetVolumeStatsResponse stats = stats(plugin, "blk", link.toString());
                    assertEquals(SIZE, stats.getUsage(0).getTotal(), link.toString());
                    assertEquals(1, stats.getUsageCount(), "no inode figures for a block volume");
                    assertFalse(stats.getVolumeCondition().getAbnormal(), stats.getVolumeCondition().getMessage());
                }
                assertEquals(stats(plugin, "blk", writable.toString()).getUsage(0).getTotal(),
                        stats(plugin, "blk", podW.toString()).getUsage(0).getTotal(), "as at the publication");

                loop.grow(2 * SIZE);
                assertEquals(2 * SIZE, node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId("blk")
                        .setVolumePath(podW.toString()).build()).getCapacityBytes());
                assertEquals(2 * SIZE, stats(plugin, "blk", podW.toString()).getUsage(0).getTotal());

                // Another device bound where kubelet binds: the fs volume's device, which is also that volume's
                // own device node (a filesystem volume is found only at its staging path and publications).
                Path another = kubeletBind(mounter, binds, other.device(), links.resolve("pod-other"));
                Path fsLink = kubeletBind(mounter, binds, other.device(), devices.resolve("fs/dev/pod-w"));
                Path symlink = Files.createSymbolicLink(links.resolve("pod-link"), writable);
                Path file = Files.createFile(links.resolve("pod-file"));
                Path throughSymlink = Files.createSymbolicLink(devices.resolve("linked"), devices.resolve("blk"))
                        .resolve("dev/pod-w");
                for (Path path : List.of(another, symlink, throughSymlink, file, links, loop.device())) {
                    assertNotFound(() -> stats(plugin, "blk", path.toString()));
                    assertNotFound(() -> node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
                            .setVolumeId("blk").setVolumePath(path.toString()).build()));
                }
                assertNotFound(() -> stats(plugin, "fs", fsLink.toString()));
                assertNotFound(() -> stats(plugin, "fs", another.toString()));
                assertTrue(Files.isSymbolicLink(symlink), "the symlink is left as it was");
            } finally {
                for (Path bind : binds.reversed()) {
                    mounter.unmount(bind);
                }
            }
            node.nodeUnpublishVolume(unpublish("blk", readonly));
            node.nodeUnpublishVolume(unpublish("blk", writable));
            node.nodeUnstageVolume(unstage("blk", staging));
            node.nodeUnstageVolume(unstage("fs", fsStaging));
        }
    }

    /** What util.MapBlockVolume does: an empty regular file at {@code link}, {@code source} bind-mounted onto it. */
    private static Path kubeletBind(Mounter mounter, List<Path> binds, Path source, Path link) throws IOException {
        Files.createDirectories(link.getParent());
        Files.createFile(link);
        mounter.bind(source, link, MountOptions.NONE);
        binds.add(link);
        return link;
    }

    private static NodeGetVolumeStatsResponse stats(PluginHarness plugin, String volumeId, String path) {
        return plugin.client().node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                .setVolumeId(volumeId).setVolumePath(path).build());
    }

    private static void assertNotFound(org.junit.jupiter.api.function.Executable call) {
        StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, call);
        assertEquals(Status.Code.NOT_FOUND, refused.getStatus().getCode(), refused.getStatus().getDescription());
    }
}
