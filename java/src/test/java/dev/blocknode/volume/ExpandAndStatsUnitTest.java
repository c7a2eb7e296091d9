package dev.blocknode.volume;

import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.read.VolumeStats;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static dev.blocknode.volume.LifecycleFixture.OTHER_VOLUME;
import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodeGetVolumeStats and NodeExpandVolume only read or grow what is there: at the volume's staging path or a
 * publication they answer; at any other path (another volume's, one outside the root, a relative one, a
 * symlink) NOT_FOUND; expand grows the filesystem by descriptor after the transport refreshed the size.
 */
class ExpandAndStatsUnitTest {

    private static final long GIB = 1L << 30;

    @TempDir
    Path temp;

    private LifecycleFixture node;
    private Path target;

    @BeforeEach
    void stageAndPublish() throws IOException, VolumeException {
        node = new LifecycleFixture(temp);
        target = node.stagedAndPublished();
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    private VolumeStats stats(String volumeId, String path) throws VolumeException {
        return node.volumes.stats(new Requests.Stats(volumeId, path, ""));
    }

    private long expand(String volumeId, String path, long requiredBytes) throws VolumeException {
        return node.volumes.expand(new Requests.Expand(volumeId, path, "", requiredBytes, 0, Optional.empty(),
                dev.blocknode.outcome.Secrets.NONE));
    }

    private static void assertNotFound(org.junit.jupiter.api.function.Executable call) {
        VolumeException refused = assertThrows(VolumeException.class, call);
        assertEquals(VolumeException.Outcome.NOT_FOUND, refused.outcome(), refused.getMessage());
    }

    @Test
    void statsOfTheStagingPathAndOfAPublicationAreTheFilesystemsUsage() throws Exception {
        for (Path path : List.of(node.staging(VOLUME), target)) {
            VolumeStats stats = stats(VOLUME, path.toString());
            assertEquals(GIB, stats.totalBytes());
            assertEquals(GIB / 2, stats.availableBytes().orElseThrow());
            assertFalse(stats.abnormal(), stats.condition());
        }
    }

    @Test
    void statsAtAPathThatIsNotTheVolumesAreNotFound() throws Exception {
        node.staged(OTHER_VOLUME, node.otherDevice);
        assertNotFound(() -> stats(VOLUME, node.staging(OTHER_VOLUME).toString()));
        assertNotFound(() -> stats(VOLUME, node.target("pod-b", VOLUME).toString()));
        assertNotFound(() -> stats(VOLUME, "/etc"));
        assertNotFound(() -> stats(VOLUME, "some/path"));
        assertNotFound(() -> stats("vol-unknown", target.toString()));
    }

    @Test
    void statsAtARecordedTargetNoLongerMountedAreNotFound() throws Exception {
        node.unpublish(VOLUME, target);
        assertNotFound(() -> stats(VOLUME, target.toString()));
    }

    @Test
    void aFilesystemTheKernelTurnedReadOnlyIsAbnormalWhereItWasAskedReadWrite() throws Exception {
        Path readOnly = node.target("pod-r", VOLUME);
        node.publish(VOLUME, readOnly, filesystem(), true);
        assertFalse(stats(VOLUME, readOnly.toString()).abnormal(), "read-only as asked is no fault");

        node.machine.turnReadOnly(node.device.number());

        VolumeStats stats = stats(VOLUME, target.toString());
        assertTrue(stats.abnormal());
        assertTrue(stats.condition().contains("read-only"), stats.condition());
        assertFalse(stats(VOLUME, readOnly.toString()).abnormal());
    }

    @Test
    void expandRefreshesTheDeviceAndGrowsTheFilesystemByDescriptorWithoutATool() throws Exception {
        node.block.sized(node.device.device(), 2 * GIB);
        node.machine.clearActions();

        assertEquals(2 * GIB, expand(VOLUME, target.toString(), 2 * GIB));

        assertEquals("refresh " + node.device.device().getFileName(), node.transport.calls().getLast());
        assertEquals(List.of("resize ext4 " + node.device.number() + " at " + node.staging(VOLUME) + " to "
                + (2 * GIB / 4096) + " blocks"), node.machine.actions(), "no command ran: the fixture's are all consumed");
        assertEquals(2 * GIB / 4096, node.machine.filesystemSize(node.device.number())[1]);
    }

    @Test
    void anExt4ThatFillsItsDeviceIsNotResized() throws Exception {
        node.block.sized(node.device.device(), GIB);
        node.machine.clearActions();

        assertEquals(GIB, expand(VOLUME, target.toString(), 0));
        node.machine.filesystemSize(node.device.number(), 4096, 2 * GIB / 4096); // bigger than the device
        assertEquals(GIB, expand(VOLUME, target.toString(), 0));

        assertEquals(List.of(), node.machine.actions(), "the superblock says there is nothing to do");
    }

    /** ext4 in 1 KiB blocks grows by whole pages, as resize2fs grows it. */
    @Test
    void anExt4OfSmallBlocksGrowsToWholePages() throws Exception {
        node.machine.filesystemSize(node.device.number(), 1024, GIB / 1024);
        node.block.sized(node.device.device(), 2 * GIB + 3 * 1024);
        node.machine.clearActions();

        expand(VOLUME, target.toString(), 0);

        assertEquals(2 * GIB / 1024, node.machine.filesystemSize(node.device.number())[1]);
    }

    @Test
    void xfsGrowsItsDataSectionToTheDevicesWholeBlocksAndNeverShrinks() throws Exception {
        Path staging = node.staging(VOLUME);
        node.machine.filesystemSize(node.device.number(), 4096, GIB / 4096);
        xfsRecord();
        node.block.sized(node.device.device(), 2 * GIB + 100);
        node.machine.clearActions();

        assertEquals(2 * GIB + 100, expand(VOLUME, staging.toString(), 0));
        assertEquals(List.of("grow xfs " + node.device.number() + " at " + staging + " to " + (2 * GIB / 4096)
                + " blocks (imaxpct 25)"), node.machine.actions());

        node.machine.clearActions();
        expand(VOLUME, staging.toString(), 0);
        node.machine.filesystemSize(node.device.number(), 4096, 3 * GIB / 4096); // bigger than the device
        expand(VOLUME, staging.toString(), 0);
        assertEquals(List.of(), node.machine.actions(), "already as big as the device: nothing asked of the kernel");
    }

    /** The record of VOLUME rewritten to say xfs: the fixture formats ext4, and only the record's word counts. */
    private void xfsRecord() throws Exception {
        var record = node.store.load(VOLUME).orElseThrow();
        node.store.save(record.toBuilder().setMount(record.getMount().toBuilder().setFsType("xfs")).build());
    }

    @Test
    void aStagingPathThatNowLeadsThroughASymlinkIsRefusedAndNothingGrows() throws Exception {
        node.block.sized(node.device.device(), 2 * GIB);
        node.machine.symlink(node.staging(VOLUME).getParent());
        node.machine.clearActions();

        VolumeException refused = assertThrows(VolumeException.class,
                () -> expand(VOLUME, target.toString(), 0));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome(), refused.getMessage());
        assertTrue(refused.getMessage().contains("symlink"), refused.getMessage());
        assertEquals(List.of(), node.machine.actions());
    }

    @Test
    void aStagingPathShowingAnotherFilesystemIsNotFoundAndNothingGrows() throws Exception {
        node.block.sized(node.device.device(), 2 * GIB);
        node.machine.mountFilesystem(node.staging(VOLUME), node.otherDevice.number(), "ext4");
        node.machine.clearActions();

        VolumeException refused = assertThrows(VolumeException.class,
                () -> expand(VOLUME, target.toString(), 0));

        assertEquals(VolumeException.Outcome.NOT_FOUND, refused.outcome(), refused.getMessage());
        assertEquals(List.of(), node.machine.actions());
        node.machine.mounter().unmount(node.staging(VOLUME));
    }

    @Test
    void ext4sPermissionDeniedNamesTheCapabilityItNeeds() throws Exception {
        node.block.sized(node.device.device(), 2 * GIB);
        node.machine.failNext("grow", node.staging(VOLUME), new NativeIOException(
                "ioctl(EXT4_IOC_RESIZE_FS)", "descriptor 7", 1, "EPERM", "Operation not permitted"));

        VolumeException refused = assertThrows(VolumeException.class, () -> expand(VOLUME, target.toString(), 0));

        assertEquals(VolumeException.Outcome.INTERNAL, refused.outcome(), refused.getMessage());
        assertTrue(refused.getMessage().contains("CAP_SYS_RESOURCE"), refused.getMessage());
    }

    @Test
    void expandBeyondTheDevicesSizeIsOutOfRange() {
        VolumeException refused = assertThrows(VolumeException.class,
                () -> expand(VOLUME, target.toString(), 2 * GIB));
        assertEquals(VolumeException.Outcome.OUT_OF_RANGE, refused.outcome());
    }

    @Test
    void expandAtAPathThatIsNotTheVolumesIsNotFound() {
        assertNotFound(() -> expand(VOLUME, node.target("pod-b", VOLUME).toString(), 0));
        assertNotFound(() -> expand(VOLUME, "/var/lib/elsewhere", 0));
        assertTrue(node.transport.calls().stream().noneMatch(call -> call.startsWith("refresh")));
    }

    @Test
    void aPublicationWhosePathNowLeadsThroughASymlinkIsRefusedUnread() {
        node.machine.symlink(target.getParent());

        VolumeException refused = assertThrows(VolumeException.class, () -> stats(VOLUME, target.toString()));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome(), refused.getMessage());
        refused = assertThrows(VolumeException.class, () -> expand(VOLUME, target.toString(), 0));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome(), refused.getMessage());
    }

    /**
     * kubelet asks for a block volume's stats at its own bind of the published device node,
     * volumeDevices/PV/dev/POD (csi_plugin.go, NewBlockVolumeMapper): found there by the node's device
     * number, and at no other file there.
     */
    @Test
    void aBlockVolumeIsFoundAtKubeletsLinkToItsDeviceAndNowhereElse() throws Exception {
        node.stage(OTHER_VOLUME, node.otherDevice, LifecycleFixture.block());
        Path published = node.root.resolve("plugins/kubernetes.io/csi/volumeDevices/publish/" + OTHER_VOLUME
                + "/pod-a");
        node.publish(OTHER_VOLUME, published, LifecycleFixture.block(), false);
        node.block.sized(node.otherDevice.device(), 3 * GIB);
        Path links = node.root.resolve("plugins/kubernetes.io/csi/volumeDevices/" + OTHER_VOLUME + "/dev");
        Path link = kubeletLink(links.resolve("pod-a"), node.otherDevice.device());

        VolumeStats stats = stats(OTHER_VOLUME, link.toString());
        assertEquals(3 * GIB, stats.totalBytes());
        assertTrue(stats.availableBytes().isEmpty(), "no usage figures for a block volume");
        assertFalse(stats.abnormal(), stats.condition());
        assertEquals(3 * GIB, expand(OTHER_VOLUME, link.toString(), 0));

        Path another = kubeletLink(links.resolve("pod-b"), node.device.device());
        Path file = links.resolve("pod-c");
        node.machine.file(file);
        Path symlink = links.resolve("pod-d");
        node.machine.symlink(symlink);
        Path throughSymlink = node.root.resolve("plugins/kubernetes.io/csi/volumeDevices/linked/dev/pod-a");
        node.machine.symlink(throughSymlink.getParent());
        for (Path path : List.of(another, file, symlink, throughSymlink, links, links.resolve("pod-absent"))) {
            assertNotFound(() -> stats(OTHER_VOLUME, path.toString()));
            assertNotFound(() -> expand(OTHER_VOLUME, path.toString(), 0));
        }
        assertNotFound(() -> stats(OTHER_VOLUME, "/dev/vdc"));
        assertNotFound(() -> stats(OTHER_VOLUME, node.root.resolve("../outside").toString()));
    }

    @Test
    void aFilesystemVolumeIsNotFoundAtADeviceNodeOfItsDevice() throws Exception {
        Path link = kubeletLink(node.root.resolve("plugins/kubernetes.io/csi/volumeDevices/" + VOLUME + "/dev/pod-a"),
                node.device.device());

        assertNotFound(() -> stats(VOLUME, link.toString()));
        assertNotFound(() -> expand(VOLUME, link.toString(), 0));
    }

    /** What util.MapBlockVolume makes: an empty file with the device node bound onto it. */
    private Path kubeletLink(Path link, Path deviceNode) throws IOException {
        node.machine.file(link);
        node.machine.mounter().bind(deviceNode, link, MountOptions.NONE);
        return link;
    }

    @Test
    void aBlockVolumeExpandsWithoutATool() throws Exception {
        node.stage(OTHER_VOLUME, node.otherDevice, LifecycleFixture.block());
        node.block.sized(node.otherDevice.device(), 3 * GIB);

        assertEquals(3 * GIB, expand(OTHER_VOLUME, node.staging(OTHER_VOLUME).toString(), 0));
        assertEquals(3 * GIB, stats(OTHER_VOLUME, node.staging(OTHER_VOLUME).toString()).totalBytes());
    }
}
