package dev.blocknode.volume;

import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.MkfsOptions;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.assertHeadIsZero;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static dev.blocknode.volume.LifecycleFixture.writeSuperblock;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A format of ours never wedges a LUN: a volume's mkfs option the tool refuses is refused before a
 * byte is written, and a filesystem this plugin made that then fails its first mount, or whose volume is unstaged
 * before any mount, is taken off again, so the device is blank as the stage found it and a corrected stage formats it.
 * The plugin never formats with the force flag. Over the fake machine, whose devices are files.
 */
class UnmountedFormatUnitTest {

    private static final Map<String, String> TOO_BIG_BLOCKS = Map.of(FilesystemKeys.MKFS_OPTIONS, "-b 65536");
    private static final Map<String, String> CASEFOLD = Map.of(FilesystemKeys.MKFS_OPTIONS,
            "-O casefold -E encoding=utf8");

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

    @Test
    void anMkfsOptionTheToolRefusesIsInvalidArgumentQuotingItAndNothingIsWritten() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        expectDryRun(TOO_BIG_BLOCKS).returns(1, "Proceed anyway? (y,N) \n",
                "mkfs.ext4: 65536-byte blocks too big for system (max 4096)\n");
        expectDryRun(Map.of()).returns(0, "Creating filesystem with 65536 4k blocks\n", "");

        VolumeException refused = assertThrows(VolumeException.class, () -> stage(TOO_BIG_BLOCKS));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertTrue(refused.getMessage().startsWith("volume_context.mkfsOptions [-b]: mkfs.ext4 refuses them (exit 1):"
                + " mkfs.ext4: 65536-byte blocks too big for system (max 4096); nothing was written"),
                refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty(), "a refused stage leaves no record");
        assertEquals(List.of("attach " + VOLUME, "abandon " + VOLUME), node.transport.calls());
        assertTrue(node.machine.actions().isEmpty(), "nothing formatted, nothing mounted");
        assertEquals(0, Files.size(node.device.device()), "the device is as the stage found it: never written");

        // The corrected PV's stage formats the device that was never touched.
        node.expectBlankFormatted(node.device);
        node.stage(VOLUME, node.device, filesystem());
        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
    }

    @Test
    void aDryRunThatFailsWithoutTheVolumesOptionsTooIsTheNodesFault() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        expectDryRun(TOO_BIG_BLOCKS).returns(1, "", "mkfs.ext4: Device or resource busy while trying to open\n");
        expectDryRun(Map.of()).returns(1, "", "mkfs.ext4: Device or resource busy while trying to open\n");

        VolumeException failed = assertThrows(VolumeException.class, () -> stage(TOO_BIG_BLOCKS));

        assertEquals(VolumeException.Outcome.INTERNAL, failed.outcome());
        assertTrue(failed.getMessage().contains("fails even without the volume's mkfsOptions"), failed.getMessage());
        assertTrue(node.machine.actions().isEmpty());
    }

    @Test
    void aFilesystemTheKernelCannotMountIsTakenOffAndTheCorrectedStageFormatsAfresh() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        expectDryRun(CASEFOLD).returns(0, "", "");
        expectFormat(CASEFOLD).andDo(command -> writeSuperblock(node.device.device()));
        node.machine.failNext("mount", node.staging(VOLUME), einval());

        VolumeException refused = assertThrows(VolumeException.class, () -> stage(CASEFOLD));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertTrue(refused.getMessage().contains("this node's kernel refuses the filesystem that"
                + " volume_context.mkfsOptions [-O, -E] made"), refused.getMessage());
        assertTrue(refused.getMessage().contains("is blank again"), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty(), "a refused stage leaves no record");
        assertHeadIsZero(node.device.device(), "the filesystem the kernel refused is off the device");

        // Before, the retry took that filesystem for data of its own, or formatted over it with -F: wedged for ever.
        node.expectBlankFormatted(node.device);
        node.stage(VOLUME, node.device, filesystem());
        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        assertTrue(node.record(VOLUME).orElseThrow().getMount().getFormattedHere());
        assertFalse(node.record(VOLUME).orElseThrow().getMount().getAwaitingFirstMount(), "mounted now");
    }

    @Test
    void aFormatCutShortIsBlankedAndFormattedAsABlankDeviceNeverForced() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).fails(1, "mkfs.ext4: interrupted");
        assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device, filesystem()));
        // As a plugin killed inside mkfs leaves it: the intent recorded, half a filesystem on the device.
        StagingRecord left = node.record(VOLUME).orElseThrow();
        node.store.save(left.toBuilder().setMount(left.getMount().toBuilder().setFormattingStarted("ext4")).build());
        writeSuperblock(node.device.device());

        node.expectProbe(node.device).andDo(command -> assertHeadIsZero(node.device.device(),
                "blanked before the probe looks")).returns(2, "", "");
        node.expectFormat(node.device);
        node.stage(VOLUME, node.device, filesystem());

        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        assertEquals("ext4", node.record(VOLUME).orElseThrow().getMount().getFsType());
    }

    @Test
    void anUnstageBeforeTheFirstMountTakesTheFormatOff() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).andDo(command -> {
            writeSuperblock(node.device.device());
            node.block.claimed(node.device.device(), true); // held for a moment by something else
        });
        node.machine.failNext("mount", node.staging(VOLUME), new IOException("mount: the disk stalled"));
        VolumeException failed = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, filesystem()));
        assertEquals(VolumeException.Outcome.INTERNAL, failed.outcome());
        assertEquals(1, failed.getSuppressed().length, "the format that could not be taken off is said");
        assertTrue(node.record(VOLUME).orElseThrow().getMount().getAwaitingFirstMount());

        node.block.claimed(node.device.device(), false);
        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));

        assertTrue(node.record(VOLUME).isEmpty());
        assertHeadIsZero(node.device.device(), "the unstage left the device blank, as the stage found it");
    }

    @Test
    void aFilesystemOnceMountedIsNeverTakenOff() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).andDo(command -> writeSuperblock(node.device.device()));
        node.stage(VOLUME, node.device, filesystem());
        assertFalse(node.record(VOLUME).orElseThrow().getMount().getAwaitingFirstMount());

        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));

        assertEquals(0x53, Files.readAllBytes(node.device.device())[0x438], "the filesystem stays");
    }

    private void stage(Map<String, String> context) throws VolumeException {
        node.volumes.stage(node.stageRequest(VOLUME, node.device, filesystem(), context));
    }

    private dev.blocknode.testing.ScriptedCommandRunner.Expectation expectDryRun(Map<String, String> context) {
        MkfsOptions options = MkfsOptions.parse(context.getOrDefault(FilesystemKeys.MKFS_OPTIONS, ""),
                FilesystemType.EXT4);
        return node.commands.expect(FilesystemType.EXT4.dryRun(node.device.device(), options).argv()
                .toArray(String[]::new));
    }

    private dev.blocknode.testing.ScriptedCommandRunner.Expectation expectFormat(Map<String, String> context) {
        return node.commands.expect(FilesystemType.EXT4.format(node.device.device(),
                MkfsOptions.parse(context.get(FilesystemKeys.MKFS_OPTIONS), FilesystemType.EXT4)).argv()
                .toArray(String[]::new));
    }

    private NativeIOException einval() {
        return new NativeIOException("mount", node.staging(VOLUME).toString(), 22, "EINVAL",
                "Invalid argument");
    }
}
