package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.fd.ConfinedDirectory;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.machine.FakeMachine;
import dev.blocknode.volume.kubelet.KubeletPaths;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fake machine keeps the host's contract, so that the lifecycle's unit tier can check refusals: through
 * KubeletPaths, a symlink anywhere on the way is INVALID_ARGUMENT however the path is opened (as
 * KubeletPathsUnitTest checks on the real kernel), nothing is created beyond it, and a descriptor names what
 * it opened, not what was mounted there later.
 */
class FakeMachinePathsUnitTest {

    private static final String FIELD = "target_path";

    @TempDir
    Path temp;

    private final FakeMachine machine = new FakeMachine();
    private KubeletPaths paths;
    private Path root;

    @BeforeEach
    void open() throws IOException {
        root = Files.createDirectories(temp.resolve("kubelet")).toRealPath();
        paths = new KubeletPaths(root, ConfinedDirectory.Resolution.OPENAT2, machine.files());
    }

    @AfterEach
    void noDescriptorLeft() {
        assertEquals(0, machine.openDescriptors());
    }

    private void refusedWhenOpened(Path confined) {
        List<Executable> opens = List.of(
                () -> paths.openDirectoryCreating(FIELD, confined).close(),
                () -> paths.openParentCreating(FIELD, confined).close(),
                () -> refuseLink(paths.openIfPresent(FIELD, confined)),
                () -> refuseLink(paths.openParentIfPresent(FIELD, confined)));
        for (Executable open : opens) {
            VolumeException e = assertThrows(VolumeException.class, open, confined.toString());
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
            assertTrue(e.getMessage().contains("symlink"), e.getMessage());
        }
    }

    private static void refuseLink(java.util.Optional<OpenedPath> opened) throws VolumeException, IOException {
        if (opened.isPresent()) {
            try (OpenedPath path = opened.get()) {
                if (path.stat().isSymlink()) {
                    throw KubeletPaths.symlinkRefused(FIELD, path.shown());
                }
            }
        }
    }

    @Test
    void aSymlinkedAncestorIsRefusedAndNothingIsCreatedBeyondIt() {
        machine.symlink(root.resolve("pods/evil"));
        refusedWhenOpened(root.resolve("pods/evil/mount"));
        refusedWhenOpened(root.resolve("pods/evil/not/yet/there"));
        assertFalse(machine.exists(root.resolve("pods/evil/not")));
    }

    @Test
    void aSymlinkAtTheLeafIsRefused() {
        Path leaf = root.resolve("pods/leaf");
        machine.symlink(leaf);
        VolumeException e = assertThrows(VolumeException.class, () -> paths.openDirectoryCreating(FIELD, leaf));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertThrows(VolumeException.class, () -> refuseLink(paths.openIfPresent(FIELD, leaf)));
    }

    @Test
    void aFileOnTheWayIsNoDirectory() throws Exception {
        machine.file(root.resolve("pods/file"));
        VolumeException e = assertThrows(VolumeException.class,
                () -> paths.openDirectoryCreating(FIELD, root.resolve("pods/file/mount")).close());
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertTrue(paths.openParentIfPresent(FIELD, root.resolve("pods/file/mount")).isEmpty());
    }

    @Test
    void aDescriptorOpenedBeforeAMountNamesTheDirectoryBeneathIt() throws Exception {
        DeviceNumber device = new DeviceNumber(254, 16);
        Path node = temp.resolve("vdb");
        machine.blockDevice(node, device);
        Path staging = root.resolve("staging");
        try (OpenedPath before = paths.openDirectoryCreating(FIELD, staging)) {
            machine.mounter().mount(node, before.viaDescriptor(), "ext4", MountOptions.NONE);
            assertEquals(FileStat.MountRoot.NO, before.stat().mountRoot());
            assertFalse(before.stat().device().equals(device));
            try (OpenedPath after = paths.openIfPresent(FIELD, staging).orElseThrow()) {
                assertEquals(FileStat.MountRoot.YES, after.stat().mountRoot());
                assertEquals(device, after.stat().device());
            }
        }
        assertEquals(List.of("mount " + node + " -> " + staging + " (ext4)"), machine.actions());
    }
}
