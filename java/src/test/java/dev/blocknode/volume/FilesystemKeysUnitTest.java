package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.MkfsOptions;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.VolumeCapability;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The filesystem keys of volume_context through NodeStageVolume over the fake machine: the preen of an ext4 the
 * device already holds (and when it does not run), a volume's mkfs options on a blank device only, and both keys
 * refused before anything is touched.
 */
class FilesystemKeysUnitTest {

    private static final String EXT4_FOUND = "TYPE=ext4\nUSAGE=filesystem\n";

    @TempDir
    Path temp;

    private LifecycleFixture node;

    @BeforeEach
    void wire() throws IOException {
        node = new LifecycleFixture(temp);
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    private void stage(VolumeCapability capability, Map<String, String> context) throws VolumeException {
        node.volumes.stage(node.stageRequest(VOLUME, node.device, capability, context));
    }

    @Test
    void anExt4TheDeviceHoldsIsPreenedBeforeItIsMounted() throws Exception {
        node.expectProbe(node.device).returns(0, EXT4_FOUND, "");
        node.expectPreen(node.device).returns(1, "/dev/vdb: 12/65536 files\n", "")
                .andDo(c -> assertTrue(node.machine.actions().isEmpty(), "nothing mounted before the preen"));

        stage(filesystem(), Map.of());

        assertEquals(List.of("mount " + node.device.device() + " -> " + node.staging(VOLUME) + " (ext4)"),
                node.machine.actions());
    }

    @Test
    void aFilesystemThatNeedsAManualRepairIsRefusedAndTheRefusalLeavesNothing() throws Exception {
        node.expectProbe(node.device).returns(0, EXT4_FOUND, "");
        node.expectPreen(node.device).returns(4, "/dev/vdb: Root inode is not a directory.\n/dev/vdb: UNEXPECTED"
                + " INCONSISTENCY; RUN fsck MANUALLY.\n", "");

        VolumeException refused = assertThrows(VolumeException.class, () -> stage(filesystem(), Map.of()));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("Root inode is not a directory"), refused.getMessage());
        assertTrue(node.machine.actions().isEmpty(), "nothing mounted");
        assertTrue(node.record(VOLUME).isEmpty(), "no record left");
        assertEquals(List.of("attach " + VOLUME, "abandon " + VOLUME), node.transport.calls());
    }

    @Test
    void aVolumeTurnsThePreenOff() throws Exception {
        node.expectProbe(node.device).returns(0, EXT4_FOUND, "");
        stage(filesystem(), Map.of(FilesystemKeys.FSCK, "off"));
        assertEquals(1, node.machine.actions().size(), "mounted without e2fsck");
    }

    @Test
    void theNodeTurnsThePreenOff(@TempDir Path other) throws Exception {
        LifecycleFixture noFsck = new LifecycleFixture(other, VolumeLimit.Settings.NONE, false);
        noFsck.expectProbe(noFsck.device).returns(0, EXT4_FOUND, "");
        noFsck.volumes.stage(noFsck.stageRequest(VOLUME, noFsck.device, filesystem(), Map.of()));
        noFsck.assertClean();
    }

    @Test
    void neitherAReadOnlyNorAMultiNodeStagePreens(@TempDir Path other) throws Exception {
        node.expectProbe(node.device).returns(0, EXT4_FOUND, "");
        stage(filesystem(AccessMode.SINGLE_NODE_READER_ONLY), Map.of());

        LifecycleFixture shared = new LifecycleFixture(other);
        shared.expectProbe(shared.device).returns(0, EXT4_FOUND, "");
        shared.volumes.stage(shared.stageRequest(VOLUME, shared.device, filesystem(AccessMode.MULTI_NODE_SINGLE_WRITER),
                Map.of()));
        shared.assertClean();
    }

    @Test
    void aFilesystemMadeInThisStageIsNotPreened() throws Exception {
        node.expectBlankFormatted(node.device);
        stage(filesystem(), Map.of());
        assertTrue(node.record(VOLUME).orElseThrow().getMount().getFormattedHere());
    }

    @Test
    void aBlankDeviceIsFormattedWithTheVolumesMkfsOptions() throws Exception {
        String options = "-b 4096 -E stride=16 -O ^metadata_csum";
        node.expectProbe(node.device).returns(2, "", "");
        node.commands.expect(FilesystemType.EXT4.dryRun(node.device.device(),
                MkfsOptions.parse(options, FilesystemType.EXT4)).argv().toArray(String[]::new)); // the tool agrees first
        node.commands.expect(FilesystemType.EXT4.format(node.device.device(),
                MkfsOptions.parse(options, FilesystemType.EXT4)).argv().toArray(String[]::new));

        stage(filesystem(), Map.of(FilesystemKeys.MKFS_OPTIONS, options));

        String mkfs = node.commands.commandLines().get(2);
        assertTrue(mkfs.contains("-E nodiscard,lazy_itable_init=1,lazy_journal_init=1,stride=16 -b 4096 -O"
                + " ^metadata_csum " + node.device.device()), mkfs);
    }

    @Test
    void mkfsOptionsForADeviceThatHoldsAFilesystemAreNotUsed() throws Exception {
        node.expectProbe(node.device).returns(0, EXT4_FOUND, "");
        node.expectPreen(node.device).returns(0, "", "");
        stage(filesystem(), Map.of(FilesystemKeys.MKFS_OPTIONS, "-b 1024"));
        assertEquals(1, node.machine.actions().size(), "mounted as it is, no mkfs");
    }

    @Test
    void badKeysAreInvalidArgumentBeforeAnythingIsTouched() {
        for (Map<String, String> bad : List.of(Map.of(FilesystemKeys.MKFS_OPTIONS, "-F"),
                Map.of(FilesystemKeys.MKFS_OPTIONS, "-m reflink=0"), // xfs's, and the volume formats as ext4
                Map.of(FilesystemKeys.FSCK, "full"))) {
            VolumeException refused = assertThrows(VolumeException.class, () -> stage(filesystem(), bad));
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome(), bad.toString());
            assertTrue(refused.getMessage().contains("volume_context." + bad.keySet().iterator().next()),
                    refused.getMessage());
        }
        assertTrue(node.transport.calls().isEmpty(), "nothing attached");
        assertTrue(node.record(VOLUME).isEmpty());
    }

    @Test
    void theOptionsAreCheckedAgainstTheFsTypeAskedForElseTheNodesDefault() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.commands.expect(FilesystemType.XFS.dryRun(node.device.device(),
                MkfsOptions.parse("-m reflink=0", FilesystemType.XFS)).argv().toArray(String[]::new));
        node.commands.expect(FilesystemType.XFS.format(node.device.device(),
                MkfsOptions.parse("-m reflink=0", FilesystemType.XFS)).argv().toArray(String[]::new));
        stage(new VolumeCapability(AccessType.Mount.parsed("xfs", List.of()), AccessMode.SINGLE_NODE_WRITER),
                Map.of(FilesystemKeys.MKFS_OPTIONS, "-m reflink=0"));
    }

    @Test
    void aBlockVolumeIgnoresTheFilesystemKeys() throws Exception {
        stage(LifecycleFixture.block(), Map.of(FilesystemKeys.MKFS_OPTIONS, "-F", FilesystemKeys.FSCK, "full"));
    }

    @Test
    void changingTheKeysOfAStagedVolumeIsAlreadyExists() throws Exception {
        node.expectProbe(node.device).returns(0, EXT4_FOUND, "");
        node.expectPreen(node.device).returns(0, "", "");
        stage(filesystem(), Map.of());
        VolumeException refused = assertThrows(VolumeException.class,
                () -> stage(filesystem(), Map.of(FilesystemKeys.FSCK, "off")));
        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
    }
}
