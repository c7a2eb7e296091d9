package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static dev.blocknode.volume.LifecycleFixture.OTHER_VOLUME;
import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodeUnpublishVolume takes away a publication of its volume and nothing else: its own staging path and
 * another volume's mount are FAILED_PRECONDITION and stay mounted; its publication is unmounted and the
 * target it made removed; a symlink at the target is refused, a target already gone is OK.
 */
class UnpublishOwnershipUnitTest {

    @TempDir
    Path temp;

    private LifecycleFixture node;
    private Path target;

    @BeforeEach
    void stageAndPublish() throws IOException, VolumeException {
        node = new LifecycleFixture(temp);
        target = node.stagedAndPublished();
        node.machine.clearActions();
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    @Test
    void itsPublicationIsUnmountedAndTheTargetRemoved() throws Exception {
        node.unpublish(VOLUME, target);

        assertEquals(List.of("unmount " + target, "remove " + target), node.machine.actions());
        assertFalse(node.machine.exists(target));
        assertFalse(node.record(VOLUME).orElseThrow().containsPublications(target.toString()));
        assertTrue(node.machine.isMounted(node.staging(VOLUME)), "the staging mount stays");
    }

    @Test
    void anUnpublishRetriedAfterTheTargetIsGoneIsOk() throws Exception {
        node.unpublish(VOLUME, target);
        node.machine.clearActions();

        node.unpublish(VOLUME, target);

        assertEquals(List.of(), node.machine.actions());
    }

    @Test
    void itsOwnStagingPathIsRefusedAndLeftMounted() {
        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.unpublish(VOLUME, node.staging(VOLUME)));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(node.machine.isMounted(node.staging(VOLUME)));
        assertEquals(List.of(), node.machine.actions());
    }

    @Test
    void anotherVolumesPublicationIsRefusedAndLeftMounted() throws Exception {
        node.staged(OTHER_VOLUME, node.otherDevice);
        Path othersTarget = node.target("pod-b", OTHER_VOLUME);
        node.publish(OTHER_VOLUME, othersTarget, filesystem(), false);
        node.machine.clearActions();

        VolumeException refused = assertThrows(VolumeException.class, () -> node.unpublish(VOLUME, othersTarget));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertEquals(node.otherDevice.number(), node.machine.mountedDevice(othersTarget).orElseThrow());
        assertEquals(List.of(), node.machine.actions());
    }

    @Test
    void withoutARecordAMountAnotherVolumeClaimsIsRefused() throws Exception {
        node.staged(OTHER_VOLUME, node.otherDevice);
        Path othersTarget = node.target("pod-b", OTHER_VOLUME);
        node.publish(OTHER_VOLUME, othersTarget, filesystem(), false);
        node.machine.clearActions();

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.unpublish("vol-unrecorded", othersTarget));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(node.machine.isMounted(othersTarget));
    }

    /**
     * A record that cannot be read may be the one claiming a mount: an unpublish of a volume without a record
     * (which would take a mount no record claims as its own) is refused while one exists, rather than guessed;
     * the volume with a record is not affected, and the unreadable one's own calls are refused naming its file.
     */
    @Test
    void withoutARecordAMountThatAnUnreadableRecordMayClaimIsRefused() throws Exception {
        node.staged(OTHER_VOLUME, node.otherDevice);
        Path othersTarget = node.target("pod-b", OTHER_VOLUME);
        node.publish(OTHER_VOLUME, othersTarget, filesystem(), false);
        Path file = node.recordFile(OTHER_VOLUME);
        java.nio.file.Files.write(file, new byte[] {'b', 'n', 'r', '1', 0, 0, 0, 0, 42}); // a checksum mismatch
        NodeVolumes restarted = node.restarted();
        node.machine.clearActions();

        VolumeException guessed = assertThrows(VolumeException.class, () -> restarted.unpublish(
                new Requests.Unpublish("vol-unrecorded", othersTarget.toString())));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, guessed.outcome());
        assertTrue(guessed.getMessage().contains(file.toString()), guessed.getMessage());
        VolumeException own = assertThrows(VolumeException.class, () -> restarted.unpublish(
                new Requests.Unpublish(OTHER_VOLUME, othersTarget.toString())));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, own.outcome());
        assertTrue(own.getMessage().contains(file + " is corrupt: checksum mismatch"), own.getMessage());
        assertEquals(List.of(), node.machine.actions());
        assertTrue(node.machine.isMounted(othersTarget));

        restarted.unpublish(new Requests.Unpublish(VOLUME, target.toString()));
        assertEquals(List.of("unmount " + target, "remove " + target), node.machine.actions());
    }

    @Test
    void aSymlinkAtTheTargetIsRefusedAndLeftInPlace() throws Exception {
        Path linked = node.target("pod-c", VOLUME);
        node.machine.symlink(linked);

        VolumeException refused = assertThrows(VolumeException.class, () -> node.unpublish(VOLUME, linked));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertTrue(node.machine.exists(linked));
    }

    @Test
    void unstageRefusesWhileAPublicationIsMounted() {
        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString())));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(node.machine.isMounted(node.staging(VOLUME)));
        assertTrue(node.machine.isMounted(target));
    }
}
