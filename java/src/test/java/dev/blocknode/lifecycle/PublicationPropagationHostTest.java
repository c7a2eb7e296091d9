package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountTable;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static dev.blocknode.testing.CsiRequests.block;
import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A publication as the host sees it. In the DaemonSet the kubelet root is mounted Bidirectional: every mount
 * the plugin makes under it is propagated to the host's mount namespace, where kubelet, the container runtime
 * and anything else reading the host path see it. Here the kubelet root is a shared tmpfs with a peer
 * ({@link PluginHarness#hostView()}) standing in for the host's copy. The copy must carry the publication's
 * flags: the kernel clones a propagated mount with the flags it has when it is attached, and never passes on
 * a later remount, so a bind made writable and then remounted read-only stays writable on the host.
 */
@Tag("host")
class PublicationPropagationHostTest {

    private static final long SIZE = 64L << 20;

    @Test
    void aReadOnlyFilesystemPublicationIsReadOnlyWithItsFlagsOnTheHostToo() throws Exception {
        try (PluginHarness plugin = PluginHarness.startOnSharedKubeletRoot()) {
            LoopDevice loop = plugin.newLoopDevice("vol", SIZE);
            Path staging = plugin.stagingPath("vol");
            Path readOnly = plugin.targetPath("pod-r", "vol");
            Path writable = plugin.targetPath("pod-w", "vol");
            VolumeCapability.AccessMode.Mode mode = VolumeCapability.AccessMode.Mode.SINGLE_NODE_MULTI_WRITER;
            // Staged without the flags, so that the publications' own flags are what is looked for.
            plugin.client().node().nodeStageVolume(stage("vol", loop.device(), staging, mount("ext4", mode)));
            VolumeCapability cap = mount("ext4", mode, "nosuid", "nodev", "noexec");
            try {
                plugin.client().node().nodePublishVolume(publish("vol", staging, writable, cap, false));
                plugin.client().node().nodePublishVolume(publish("vol", staging, readOnly, cap, true));

                for (Path seen : List.of(readOnly, plugin.asTheHostSeesIt(readOnly))) {
                    assertEquals(List.of("nodev", "noexec", "nosuid", "ro"),
                            flags(seen, "ro", "rw", "nosuid", "nodev", "noexec"), "mountinfo of " + seen);
                }
                for (Path seen : List.of(writable, plugin.asTheHostSeesIt(writable))) {
                    assertEquals(List.of("nodev", "noexec", "nosuid", "rw"),
                            flags(seen, "ro", "rw", "nosuid", "nodev", "noexec"), "mountinfo of " + seen);
                }
                Files.writeString(plugin.asTheHostSeesIt(writable).resolve("a"), "x");
                FileSystemException refused = assertThrows(FileSystemException.class,
                        () -> Files.writeString(plugin.asTheHostSeesIt(readOnly).resolve("b"), "x"));
                assertTrue(String.valueOf(refused.getMessage()).contains("Read-only file system"),
                        refused.getMessage());

                plugin.client().node().nodeUnpublishVolume(unpublish("vol", readOnly));
                assertEquals(Optional.empty(), entry(plugin.asTheHostSeesIt(readOnly)), "the unmount propagated too");
            } finally { // also after a failed check: the harness then finds nothing of the volume left
                plugin.client().node().nodeUnpublishVolume(unpublish("vol", readOnly));
                plugin.client().node().nodeUnpublishVolume(unpublish("vol", writable));
                plugin.client().node().nodeUnstageVolume(unstage("vol", staging));
            }
        }
    }

    @Test
    void aReadOnlyBlockPublicationIsAReadOnlyMountOnTheHostToo() throws Exception {
        try (PluginHarness plugin = PluginHarness.startOnSharedKubeletRoot()) {
            LoopDevice loop = plugin.newLoopDevice("blk", SIZE);
            Path staging = plugin.stagingPath("blk");
            Path target = plugin.kubeletRoot().resolve("plugins/kubernetes.io/csi/volumeDevices/publish/blk/pod-b");
            Files.createDirectories(target.getParent());
            VolumeCapability cap = block();
            plugin.client().node().nodeStageVolume(stage("blk", loop.device(), staging, cap));
            try {
                plugin.client().node().nodePublishVolume(publish("blk", staging, target, cap, true));

                for (Path seen : List.of(target, plugin.asTheHostSeesIt(target))) {
                    assertEquals(List.of("ro"), flags(seen, "ro", "rw"), "mountinfo of " + seen);
                }

                plugin.client().node().nodeUnpublishVolume(unpublish("blk", target));
                assertEquals(Optional.empty(), entry(plugin.asTheHostSeesIt(target)), "the unmount propagated too");
            } finally { // also after a failed check: the read-only view's loop device is released
                plugin.client().node().nodeUnpublishVolume(unpublish("blk", target));
                plugin.client().node().nodeUnstageVolume(unstage("blk", staging));
            }
        }
    }

    /** Which of {@code wanted} the top mount at {@code mountPoint} lists among its per-mount options, sorted. */
    private static List<String> flags(Path mountPoint, String... wanted) throws IOException {
        MountEntry entry = entry(mountPoint).orElseThrow(() -> new AssertionError("nothing mounted at " + mountPoint));
        List<String> options = List.of(entry.mountOptions().split(","));
        return List.of(wanted).stream().filter(options::contains).sorted().toList();
    }

    private static Optional<MountEntry> entry(Path mountPoint) throws IOException {
        List<MountEntry> table = MountTable.read(Path.of("/proc/self/mountinfo"));
        return table.stream().filter(e -> e.mountPoint().equals(mountPoint)).reduce((first, last) -> last);
    }
}
