package dev.blocknode.lifecycle;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.CsiRequests;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodeUnpublishVolume takes away a publication of the volume it names, and nothing else: not another
 * volume's publication (whether that volume is staged here or not), not the volume's own staging mount.
 */
@Tag("host")
class UnpublishOwnershipHostTest {

    @Test
    void anotherVolumesPublicationIsRefusedAndLeftMounted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            var node = plugin.client().node();
            LoopDevice pub = plugin.newLoopDevice("pub", 64L << 20);
            LoopDevice other = plugin.newLoopDevice("other", 64L << 20);
            Path staging = plugin.stagingPath("v-pub");
            Path target = plugin.targetPath("pod-a", "v-pub");
            node.nodeStageVolume(CsiRequests.stage("v-pub", pub.device(), staging, CsiRequests.mount("ext4")));
            node.nodePublishVolume(CsiRequests.publish("v-pub", staging, target, CsiRequests.mount("ext4"), false));
            Files.writeString(target.resolve("data"), "v-pub's");

            // A volume this node has never staged: no record of its own to compare with.
            assertRefusedAndStillMounted(plugin, "v-unknown", target);
            // A volume staged here, on another device.
            Path otherStaging = plugin.stagingPath("v-other");
            node.nodeStageVolume(CsiRequests.stage("v-other", other.device(), otherStaging,
                    CsiRequests.mount("ext4")));
            assertRefusedAndStillMounted(plugin, "v-other", target);

            assertEquals("v-pub's", Files.readString(target.resolve("data")));
            node.nodeUnpublishVolume(CsiRequests.unpublish("v-pub", target));
            node.nodeUnstageVolume(CsiRequests.unstage("v-pub", staging));
            node.nodeUnstageVolume(CsiRequests.unstage("v-other", otherStaging));
        }
    }

    @Test
    void theVolumesOwnStagingPathIsRefusedAndLeftMounted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            var node = plugin.client().node();
            LoopDevice pub = plugin.newLoopDevice("pub", 64L << 20);
            Path staging = plugin.stagingPath("v-pub");
            Path target = plugin.targetPath("pod-a", "v-pub");
            node.nodeStageVolume(CsiRequests.stage("v-pub", pub.device(), staging, CsiRequests.mount("ext4")));
            node.nodePublishVolume(CsiRequests.publish("v-pub", staging, target, CsiRequests.mount("ext4"), false));

            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> node.nodeUnpublishVolume(CsiRequests.unpublish("v-pub", staging)));
            assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode());
            assertTrue(e.getStatus().getDescription().contains("staging path"), e.getStatus().getDescription());
            assertTrue(HostAssertions.mountsUnder(staging).contains(staging), "the staging mount was taken down");

            // Still staged: a retried stage with the original arguments is OK, and the pod keeps its volume.
            node.nodeStageVolume(CsiRequests.stage("v-pub", pub.device(), staging, CsiRequests.mount("ext4")));
            node.nodeUnpublishVolume(CsiRequests.unpublish("v-pub", target));
            node.nodeUnstageVolume(CsiRequests.unstage("v-pub", staging));
        }
    }

    /**
     * Kubelet binds a raw block publication's device node again at a path of its own (volumeDevices/<pv>/dev/<pod
     * uid>), which no record names. For a read-only publication that node is the publication's read-only view, not
     * the volume's device: it is still the volume's, known by its number, and an unpublish of a volume with no
     * record there is refused.
     */
    @Test
    void kubeletsOwnBindOfAReadOnlyBlockPublicationIsAnotherVolumesMount() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            var node = plugin.client().node();
            LoopDevice pub = plugin.newLoopDevice("pub", 16L << 20);
            Path staging = plugin.stagingPath("v-blk");
            Path target = plugin.targetPath("pod-a", "v-blk");
            node.nodeStageVolume(CsiRequests.stage("v-blk", pub.device(), staging, CsiRequests.block()));
            node.nodePublishVolume(CsiRequests.publish("v-blk", staging, target, CsiRequests.block(), true));
            Path podLink = plugin.kubeletRoot().resolve("plugins/kubernetes.io/csi/volumeDevices/v-blk/dev/pod-a");
            Files.createDirectories(podLink.getParent());
            Files.createFile(podLink);
            LinuxNative.mount(target.toString(), podLink.toString(), null, LinuxNative.MS_BIND, null);
            try {
                assertRefusedAndStillMounted(plugin, "v-unknown", podLink);
                // Nor does an unstage of a volume with no record take it for a staging mount to rebuild from.
                try {
                    node.nodeUnstageVolume(CsiRequests.unstage("v-unknown", podLink));
                } catch (StatusRuntimeException refused) {
                    assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
                }
                assertTrue(HostAssertions.mountsUnder(podLink).contains(podLink), "kubelet's bind was taken down");
                assertEquals(java.util.Optional.empty(),
                        new dev.blocknode.state.RecordStore(plugin.stateDir()).load("v-unknown"), "no record made");
            } finally {
                if (Files.exists(podLink) && LinuxNative.isMountPoint(podLink.toString())) {
                    LinuxNative.umount2(podLink.toString(), 0);
                }
                // Also when an assertion failed: the read-only view is the plugin's to release (the harness
                // detaches only the loop devices it made).
                node.nodeUnpublishVolume(CsiRequests.unpublish("v-blk", target));
                node.nodeUnstageVolume(CsiRequests.unstage("v-blk", staging));
            }
        }
    }

    private static void assertRefusedAndStillMounted(PluginHarness plugin, String volumeId, Path target)
            throws Exception {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                () -> plugin.client().node().nodeUnpublishVolume(CsiRequests.unpublish(volumeId, target)));
        assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode(), e.getStatus().getDescription());
        assertTrue(HostAssertions.mountsUnder(target).contains(target), "the publication was taken down");
    }
}
