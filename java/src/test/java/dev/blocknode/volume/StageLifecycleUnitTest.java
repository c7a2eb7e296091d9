package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodeStageVolume and NodeUnstageVolume step by step over the fake machine: the phases the record passes
 * through (ATTACHING before the attach, STAGING before mkfs writes, STAGED at the end), a retry after a
 * failure in each phase continuing where it stopped, a refusal leaving nothing, and teardown.
 */
class StageLifecycleUnitTest {

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
    void aBlankDeviceIsFormattedAndMountedThroughTheRecordedPhases() throws Exception {
        List<StagePhase> seen = new ArrayList<>();
        node.transport.duringAttach(() -> seen.add(node.phase(VOLUME)));
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).andDo(command -> seen.add(node.phase(VOLUME)));

        node.stage(VOLUME, node.device, filesystem());

        assertEquals(List.of(StagePhase.ATTACHING, StagePhase.STAGING), seen);
        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        assertTrue(node.record(VOLUME).orElseThrow().getMount().getFormattedHere());
        assertEquals(List.of("mount " + node.device.device() + " -> " + node.staging(VOLUME) + " (ext4)"),
                node.machine.actions());
        assertEquals(node.device.number(), node.machine.mountedDevice(node.staging(VOLUME)).orElseThrow());
        assertEquals(List.of("attach " + VOLUME), node.transport.calls());
    }

    @Test
    void aStagedVolumeStagedAgainIsLeftAsItIs() throws Exception {
        node.staged(VOLUME, node.device);
        node.machine.clearActions();

        node.stage(VOLUME, node.device, filesystem());

        assertEquals(List.of(), node.machine.actions());
        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
    }

    @Test
    void aRetryAfterAFailedAttachAttachesAgainFromItsAttachingRecord() throws Exception {
        node.transport.failNextAttach(VolumeException.internal("the array timed out", null));
        VolumeException failed = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, filesystem()));
        assertEquals(VolumeException.Outcome.INTERNAL, failed.outcome());
        assertEquals(StagePhase.ATTACHING, node.phase(VOLUME), "a failure that is no refusal keeps the record");
        assertTrue(node.machine.actions().isEmpty());

        node.expectBlankFormatted(node.device);
        node.stage(VOLUME, node.device, filesystem());

        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        assertEquals(List.of("attach " + VOLUME, "attach " + VOLUME), node.transport.calls());
    }

    @Test
    void aFailedMkfsLeavesTheDeviceBlankAndTheRetryFormatsItAfresh() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).andDo(command -> LifecycleFixture.writeSuperblock(node.device.device()))
                .fails(1, "mkfs.ext4: interrupted");
        assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device, filesystem()));
        assertEquals(StagePhase.STAGING, node.phase(VOLUME));
        assertEquals("", node.record(VOLUME).orElseThrow().getMount().getFormattingStarted(),
                "no format of ours is under way: the device is blank again");
        LifecycleFixture.assertHeadIsZero(node.device.device(), "what the failed mkfs wrote is taken off");

        // Blank again, as the first attempt found it: formatted as a blank device is, never forced.
        node.expectBlankFormatted(node.device);
        node.stage(VOLUME, node.device, filesystem());

        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        assertTrue(node.machine.isMounted(node.staging(VOLUME)));
    }

    @Test
    void aRetryAfterAFailedMountOfAFilesystemFoundMountsWithoutFormatting() throws Exception {
        node.expectProbe(node.device).returns(0, "TYPE=ext4\nUSAGE=filesystem\n", "");
        node.expectPreen(node.device).returns(0, "", "");
        node.machine.failNext("mount", node.staging(VOLUME), new IOException("mount: the disk stalled"));
        assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device, filesystem()));
        assertEquals(StagePhase.STAGING, node.phase(VOLUME));
        assertFalse(node.machine.isMounted(node.staging(VOLUME)));

        node.expectProbe(node.device).returns(0, "TYPE=ext4\nUSAGE=filesystem\n", "");
        node.expectPreen(node.device).returns(0, "", "");
        node.stage(VOLUME, node.device, filesystem());

        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        assertEquals(node.device.number(), node.machine.mountedDevice(node.staging(VOLUME)).orElseThrow());
    }

    @Test
    void aMountOptionTheKernelRejectsIsInvalidArgumentAndTheRefusalLeavesNothing() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).andDo(command -> LifecycleFixture.writeSuperblock(node.device.device()));
        node.machine.failNext("mount", node.staging(VOLUME), new NativeIOException("mount",
                node.staging(VOLUME).toString(), 22, "EINVAL", "Invalid argument"));

        VolumeException refused = assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device,
                filesystem(AccessMode.SINGLE_NODE_WRITER, "stripe=7")));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertTrue(refused.getMessage().contains("mount_flags"), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty(), "a refused stage leaves no record");
        assertTrue(node.machine.mountPoints().isEmpty());
        assertEquals(List.of("attach " + VOLUME, "abandon " + VOLUME), node.transport.calls(),
                "the refused stage undid its own attach");
        LifecycleFixture.assertHeadIsZero(node.device.device(), "the refused stage undid its own format");
    }

    /**
     * A refusal after our mkfs (the kernel refusing an option every check let
     * through) used to delete the record that said the filesystem was ours, leaving it on the device, so a retry
     * asking for the other filesystem was refused for ever as "holding ext4". The refusal undoes the format,
     * and the retry finds the device blank, as the first attempt did.
     */
    @Test
    void aRetryWithTheOtherFilesystemAfterARefusalThatFollowedOurFormatStages() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).andDo(command -> LifecycleFixture.writeSuperblock(node.device.device()));
        node.machine.failNext("mount", node.staging(VOLUME), new NativeIOException("mount",
                node.staging(VOLUME).toString(), 22, "EINVAL", "Invalid argument"));
        assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device,
                filesystem(AccessMode.SINGLE_NODE_WRITER, "journal_async_commit")));

        // The probe reads the head itself once blkid finds nothing: zeros again, so the device is blank.
        node.expectProbe(node.device).returns(2, "", "");
        node.commands.expect(dev.blocknode.volume.filesystem.FilesystemType.XFS.format(node.device.device()).argv()
                .toArray(String[]::new));
        node.stage(VOLUME, node.device, new VolumeCapability(AccessType.Mount.parsed("xfs", List.of()),
                AccessMode.SINGLE_NODE_WRITER));

        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        assertEquals("xfs", node.record(VOLUME).orElseThrow().getMount().getFsType());
        assertTrue(node.record(VOLUME).orElseThrow().getMount().getFormattedHere());
        assertEquals(node.device.number(), node.machine.mountedDevice(node.staging(VOLUME)).orElseThrow());
    }

    @Test
    void aFormatIsNotUndoneOnADeviceSomethingElseNowHolds() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).andDo(command -> {
            LifecycleFixture.writeSuperblock(node.device.device());
            node.block.claimed(node.device.device(), true); // mounted by someone else right after our mkfs
        });
        node.machine.failNext("mount", node.staging(VOLUME), new NativeIOException("mount",
                node.staging(VOLUME).toString(), 22, "EINVAL", "Invalid argument"));

        VolumeException refused = assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device,
                filesystem(AccessMode.SINGLE_NODE_WRITER, "journal_async_commit")));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertEquals(1, refused.getSuppressed().length, "the format that was not undone is said");
        assertEquals(0x53, java.nio.file.Files.readAllBytes(node.device.device())[0x438],
                "what is on a device in use is never zeroed");
    }

    @Test
    void withNoFsTypeAnOptionOfTheOtherFilesystemIsRefusedBeforeTheDefaultOneIsMade() throws Exception {
        node.expectProbe(node.device).returns(2, "", ""); // blank: the default, ext4, would be made

        VolumeException refused = assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device,
                new VolumeCapability(AccessType.Mount.parsed("", List.of("logbufs=4")),
                        AccessMode.SINGLE_NODE_WRITER)));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertTrue(refused.getMessage().contains("mount option logbufs="), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty());
        assertTrue(node.machine.actions().isEmpty(), "nothing formatted, nothing mounted");
    }

    @Test
    void withNoFsTypeTheOptionsOfTheFilesystemFoundAreTaken() throws Exception {
        node.expectProbe(node.device).returns(0, "TYPE=xfs\nUSAGE=filesystem\n", "");

        node.stage(VOLUME, node.device, new VolumeCapability(AccessType.Mount.parsed("", List.of("logbufs=4")),
                AccessMode.SINGLE_NODE_WRITER));

        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        assertEquals(List.of("mount " + node.device.device() + " -> " + node.staging(VOLUME) + " (xfs)"),
                node.machine.actions());
    }

    @Test
    void anEinvalWithoutFilesystemOptionsIsTheNodesFaultNotTheCallers() throws Exception {
        node.expectBlankFormatted(node.device);
        node.machine.failNext("mount", node.staging(VOLUME), new NativeIOException("mount",
                node.staging(VOLUME).toString(), 22, "EINVAL", "Invalid argument"));

        VolumeException failed = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, filesystem()));

        assertEquals(VolumeException.Outcome.INTERNAL, failed.outcome());
        assertEquals(StagePhase.STAGING, node.phase(VOLUME), "kept for the retry");
        assertFalse(node.record(VOLUME).orElseThrow().getMount().getFormattedHere(),
                "the filesystem made for the failed mount was never mounted: taken off, the retry formats afresh");
    }

    @Test
    void aDeviceHoldingDataIsRefusedAndTheRefusalLeavesNoRecord() throws Exception {
        node.expectProbe(node.device).returns(0, "TYPE=xfs\nUSAGE=filesystem\n", "");

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, filesystem()));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(node.record(VOLUME).isEmpty(), "a refused stage leaves no record");
        assertTrue(node.machine.mountPoints().isEmpty());
        assertEquals(List.of("attach " + VOLUME, "abandon " + VOLUME), node.transport.calls(),
                "the refused stage undid its own attach");
    }

    @Test
    void aDeviceInUseIsRefusedBeforeAnythingIsWritten() throws Exception {
        node.block.claimed(node.device.device(), true);
        node.machine.mountFilesystem(Path.of("/mnt/by-hand"), node.device.number(), "ext4");

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, filesystem()));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("/mnt/by-hand"), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty());
    }

    /**
     * Held by a mount that only another mount namespace shows (a node's left over from a power cut, seen through a
     * shared kernel): the refusal said only "in use on this node", and the node's own mount table showed nothing.
     */
    @Test
    void aDeviceHeldByNothingThisNamespaceShowsIsRefusedSayingWhereToLook() throws Exception {
        node.block.claimed(node.device.device(), true);

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, filesystem()));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("in use on this node (not by a mount this mount namespace shows")
                && refused.getMessage().contains("another mount namespace"), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty());
    }

    @Test
    void aSymlinkInTheStagingPathIsRefusedAndNothingIsAttachedOrMounted() throws Exception {
        node.machine.symlink(node.staging(VOLUME).getParent());

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, filesystem()));

        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertTrue(node.machine.mountPoints().isEmpty());
        assertTrue(node.record(VOLUME).isEmpty());
    }

    @Test
    void anotherDeviceMountedAtTheStagingPathIsAlreadyExists() throws Exception {
        node.machine.mountFilesystem(node.staging(VOLUME), new DeviceNumber(254, 99), "ext4");

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, filesystem()));

        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
        assertTrue(node.record(VOLUME).isEmpty());
        assertEquals(new DeviceNumber(254, 99), node.machine.mountedDevice(node.staging(VOLUME)).orElseThrow());
    }

    @Test
    void unstageUnmountsFlushesDetachesAndForgets() throws Exception {
        node.staged(VOLUME, node.device);
        node.machine.clearActions();

        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));

        assertEquals(List.of("unmount " + node.staging(VOLUME)), node.machine.actions());
        assertEquals(List.of(node.device.device()), node.block.flushed());
        assertEquals("detach " + node.device.device().getFileName(), node.transport.calls().getLast());
        assertTrue(node.record(VOLUME).isEmpty());
    }

    @Test
    void aFlushRefusedUnderAnotherNodesReservationDoesNotKeepTheVolumeOnTheNode() throws Exception {
        node.staged(VOLUME, node.device);
        node.block.failFlush(node.device.device(), SyscallException.of(new NativeIOException("fsync",
                node.device.device().toString(), 52, "EBADE", "Invalid exchange")));

        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));

        assertEquals("detach " + node.device.device().getFileName(), node.transport.calls().getLast());
        assertTrue(node.record(VOLUME).isEmpty());
    }

    @Test
    void anyOtherFlushFailureKeepsTheVolumeStaged() throws Exception {
        node.staged(VOLUME, node.device);
        node.block.failFlush(node.device.device(), SyscallException.of(new NativeIOException("fsync",
                node.device.device().toString(), 5, "EIO", "Input/output error")));

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString())));

        assertEquals(VolumeException.Outcome.INTERNAL, refused.outcome());
        assertTrue(refused.getMessage().contains("flushing device"), refused.getMessage());
        assertTrue(node.transport.calls().stream().noneMatch(c -> c.startsWith("detach")), "not detached");
        assertTrue(node.record(VOLUME).isPresent(), "the record stays for the retry");
    }

    @Test
    void unstageWithItsRecordLostTracesTheMountBackToTheTransportAndTearsItAllDown() throws Exception {
        node.staged(VOLUME, node.device);
        node.store.delete(VOLUME); // a wiped state dir: only the mount at the staging path says what is there

        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));

        assertTrue(node.machine.mountPoints().isEmpty(), "the staging mount is gone");
        assertTrue(node.record(VOLUME).isEmpty());
        assertEquals(List.of("attach " + VOLUME, "recognise " + node.device.number(), "detach vdb"),
                node.transport.calls(), "the transport that recognised the device detached it");
        assertTrue(node.block.flushed().contains(node.device.device()), "flushed before the detach");
    }

    @Test
    void unstageOfAnInterruptedAttachAbandonsIt() throws Exception {
        node.transport.failNextAttach(VolumeException.internal("the array timed out", null));
        assertThrows(VolumeException.class, () -> node.stage(VOLUME, node.device, filesystem()));

        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));

        assertEquals("abandon " + VOLUME, node.transport.calls().getLast());
        assertTrue(node.record(VOLUME).isEmpty());
    }
}
