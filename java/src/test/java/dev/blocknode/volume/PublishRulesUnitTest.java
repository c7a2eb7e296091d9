package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.request.AccessMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodePublishVolume's rules over the fake machine: the staged filesystem is bound by descriptor; the same
 * arguments again are OK, other arguments ALREADY_EXISTS; a second target of a SINGLE_NODE_SINGLE_WRITER
 * volume FAILED_PRECONDITION; read-only and the mount flags are made with the bind, in one step; a symlink on
 * the way is INVALID_ARGUMENT with nothing mounted; a block volume's device is bound onto a file.
 */
class PublishRulesUnitTest {

    @TempDir
    Path temp;

    private LifecycleFixture node;
    private Path target;

    @BeforeEach
    void stage() throws IOException, VolumeException {
        node = new LifecycleFixture(temp);
        node.staged(VOLUME, node.device);
        node.machine.clearActions();
        target = node.target("pod-a", VOLUME);
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    @Test
    void theStagedFilesystemIsBoundAtTheTarget() throws Exception {
        node.publish(VOLUME, target, filesystem(), false);

        assertEquals(List.of("bind " + node.staging(VOLUME) + " -> " + target), node.machine.actions());
        assertEquals(node.device.number(), node.machine.mountedDevice(target).orElseThrow());
        assertTrue(node.record(VOLUME).orElseThrow().containsPublications(target.toString()));
    }

    @Test
    void theSameArgumentsAgainAreOkAndChangeNothing() throws Exception {
        node.publish(VOLUME, target, filesystem(), false);
        node.machine.clearActions();

        node.publish(VOLUME, target, filesystem(), false);

        assertEquals(List.of(), node.machine.actions());
    }

    @Test
    void otherArgumentsAtTheSameTargetAreAlreadyExists() throws Exception {
        node.publish(VOLUME, target, filesystem(), false);

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.publish(VOLUME, target, filesystem(), true));

        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
        assertEquals("rw", node.machine.mountFlags(target).orElseThrow());
    }

    @Test
    void aSecondTargetOfASingleWriterVolumeIsRefused() throws Exception {
        node.publish(VOLUME, target, filesystem(AccessMode.SINGLE_NODE_SINGLE_WRITER), false);
        Path second = node.target("pod-b", VOLUME);

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.publish(VOLUME, second, filesystem(AccessMode.SINGLE_NODE_SINGLE_WRITER), false));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertFalse(node.machine.isMounted(second));
    }

    @Test
    void aSecondTargetOfAMultiWriterVolumeIsPublished() throws Exception {
        node.publish(VOLUME, target, filesystem(AccessMode.SINGLE_NODE_MULTI_WRITER), false);
        Path second = node.target("pod-b", VOLUME);

        node.publish(VOLUME, second, filesystem(AccessMode.SINGLE_NODE_MULTI_WRITER), false);

        assertTrue(node.machine.isMounted(second));
    }

    @Test
    void readOnlyAndTheMountFlagsArePartOfTheBindItself() throws Exception {
        node.publish(VOLUME, target, filesystem(AccessMode.SINGLE_NODE_WRITER, "nosuid"), true);

        // One step, no remount after it: the copy the kernel propagates to the host has the flags too.
        assertEquals(List.of("bind " + node.staging(VOLUME) + " -> " + target + " (ro,0x3)"),
                node.machine.actions());
        assertEquals("ro,0x3", node.machine.mountFlags(target).orElseThrow());
    }

    @Test
    void aFailedReadOnlyBindLeavesNothingMounted() throws Exception {
        node.machine.failNext("bind", target, new IOException("move_mount refused"));

        VolumeException failed = assertThrows(VolumeException.class,
                () -> node.publish(VOLUME, target, filesystem(), true));

        assertEquals(VolumeException.Outcome.INTERNAL, failed.outcome());
        assertTrue(failed.getMessage().contains("read-only") && failed.getMessage().contains("move_mount refused"),
                failed.getMessage());
        assertEquals(List.of(), node.machine.actions(), "never a writable bind where read-only was asked for");
        assertFalse(node.machine.isMounted(target));
    }

    @Test
    void aSymlinkInTheTargetPathIsInvalidAndNothingIsMounted() throws Exception {
        node.machine.symlink(target.getParent());

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.publish(VOLUME, target, filesystem(), false));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertEquals(List.of(), node.machine.actions());
    }

    @Test
    void aSymlinkAtTheTargetItselfIsInvalidAndNothingIsMounted() throws Exception {
        node.machine.symlink(target);

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.publish(VOLUME, target, filesystem(), false));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertEquals(List.of(), node.machine.actions());
    }

    @Test
    void aTargetHoldingAnotherMountIsAlreadyExists() throws Exception {
        node.machine.mountFilesystem(target, node.otherDevice.number(), "ext4");

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.publish(VOLUME, target, filesystem(), false));

        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
        assertEquals(node.otherDevice.number(), node.machine.mountedDevice(target).orElseThrow());
    }

    @Test
    void aBlockVolumesDeviceIsBoundOntoAFile() throws Exception {
        node.stage(LifecycleFixture.OTHER_VOLUME, node.otherDevice, LifecycleFixture.block());
        Path blockTarget = node.root.resolve("plugins/kubernetes.io/csi/volumeDevices/publish/"
                + LifecycleFixture.OTHER_VOLUME + "/pod-a");

        node.publish(LifecycleFixture.OTHER_VOLUME, blockTarget, LifecycleFixture.block(), false);

        assertEquals(List.of("bind " + node.otherDevice.device() + " -> " + blockTarget), node.machine.actions());
        assertEquals(node.otherDevice.number(), node.machine.mountedDevice(blockTarget).orElseThrow());
    }
}
