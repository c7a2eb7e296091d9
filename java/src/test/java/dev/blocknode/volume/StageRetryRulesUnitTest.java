package dev.blocknode.volume;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.BlockAccessRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.ScriptedTransport;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.VolumeCapability;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import static dev.blocknode.testing.ScriptedTransport.DEVICE_KEY;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** How a stage retry is held to an earlier attempt's record: decisions on data alone, no machine at all. */
class StageRetryRulesUnitTest {

    private final ScriptedTransport transport = new ScriptedTransport();

    private static StagingRecord.Builder recorded(Map<String, String> volumeContext) {
        return StagingRecord.newBuilder().setVolumeId("vol").setTransport(ScriptedTransport.NAME)
                .setStagingPath("/kubelet/staging/vol").setPhase(StagePhase.STAGED)
                .setAccessMode(AccessMode.SINGLE_NODE_WRITER.name()).putAllVolumeContext(volumeContext);
    }

    private static AttachRequest request(Map<String, String> volumeContext, Map<String, String> publishContext) {
        return new AttachRequest("vol", volumeContext, publishContext, Secrets.NONE);
    }

    @Test
    void aKeyThatMovedToThePublishContextWithItsValueNamesTheSameDevice() {
        StagingRecord record = recorded(Map.of(DEVICE_KEY, "vdb")).build();

        assertTrue(StageRetryRules.sameAttach(record, transport, request(Map.of(), Map.of(DEVICE_KEY, "vdb"))));
        assertTrue(StageRetryRules.sameAttach(record, transport,
                request(Map.of(DEVICE_KEY, "vdb", "transport", ScriptedTransport.NAME), Map.of())),
                "the transport key selects the transport, compared by name");
    }

    @Test
    void anotherDeviceIsAlreadyExistsNamingTheKeyButNeverItsValue() {
        StagingRecord record = recorded(Map.of(DEVICE_KEY, "vdb")).build();
        AttachRequest other = request(Map.of(DEVICE_KEY, "secret-looking-vdc"), Map.of());

        assertFalse(StageRetryRules.sameAttach(record, transport, other));
        VolumeException refused = assertThrows(VolumeException.class,
                () -> StageRetryRules.requireSameDevice(record, transport, other));
        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
        assertTrue(refused.getMessage().contains("[" + DEVICE_KEY + "]"), refused.getMessage());
        assertFalse(refused.getMessage().contains("secret-looking-vdc"), refused.getMessage());
    }

    @Test
    void anotherTransportIsAlreadyExists() {
        StagingRecord record = recorded(Map.of(DEVICE_KEY, "vdb")).setTransport("iscsi").build();

        VolumeException refused = assertThrows(VolumeException.class, () -> StageRetryRules.requireSameDevice(
                record, transport, request(Map.of(DEVICE_KEY, "vdb"), Map.of())));
        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
    }

    @Test
    void aStagedVolumeBindsItsWholeCapability() {
        StagingRecord block = recorded(Map.of()).setBlock(BlockAccessRecord.getDefaultInstance()).build();
        VolumeCapability mount = new VolumeCapability(AccessType.Mount.parsed("", List.of()),
                AccessMode.SINGLE_NODE_WRITER);
        VolumeCapability readerBlock = new VolumeCapability(new AccessType.Block(), AccessMode.SINGLE_NODE_READER_ONLY);

        for (VolumeCapability other : List.of(mount, readerBlock)) {
            VolumeException refused = assertThrows(VolumeException.class,
                    () -> StageRetryRules.requireCompatible(block, other, Optional.empty(), true));
            assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
        }
        assertDoesNotThrow(() -> StageRetryRules.requireCompatible(block,
                new VolumeCapability(new AccessType.Block(), AccessMode.SINGLE_NODE_WRITER), Optional.empty(), true));
    }

    @Test
    void beforeItBindsOnlyAFilesystemThisPluginMadeHoldsTheRetry() {
        StagingRecord.Builder interrupted = recorded(Map.of()).setPhase(StagePhase.STAGING);
        VolumeCapability xfs = new VolumeCapability(AccessType.Mount.parsed("xfs", List.of("noatime")),
                AccessMode.SINGLE_NODE_READER_ONLY);
        StagingRecord madeHere = interrupted.clone()
                .setMount(MountAccessRecord.newBuilder().setFsType("ext4").setFormattedHere(true)).build();
        StagingRecord notYet = interrupted.clone()
                .setMount(MountAccessRecord.newBuilder().setFsType("ext4")).build();

        VolumeException refused = assertThrows(VolumeException.class, () -> StageRetryRules.requireCompatible(
                madeHere, xfs, Optional.of(FilesystemType.XFS), false));
        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
        assertDoesNotThrow(() -> StageRetryRules.requireCompatible(notYet, xfs, Optional.of(FilesystemType.XFS),
                false), "an attempt cut short before its mkfs promised nothing");
    }

    @Test
    void aFilesystemThePluginDoesNotMakeIsInvalidArgument() {
        VolumeException refused = assertThrows(VolumeException.class, () -> StageRetryRules.requestedFilesystem(
                new VolumeCapability(AccessType.Mount.parsed("btrfs", List.of()), AccessMode.SINGLE_NODE_WRITER)));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
    }

    @Test
    void otherMountFlagsAreAlreadyExistsNamingOnlyTheFlagsThatDiffer() {
        StagingRecord staged = recorded(Map.of()).setMount(MountAccessRecord.newBuilder().setFsType("ext4")
                .addAllMountFlags(List.of("noatime", "nodiscard"))).build();
        VolumeCapability other = new VolumeCapability(AccessType.Mount.parsed("ext4", List.of("noatime", "ro")),
                AccessMode.SINGLE_NODE_WRITER);

        VolumeException refused = assertThrows(VolumeException.class,
                () -> StageRetryRules.requireCompatible(staged, other, Optional.of(FilesystemType.EXT4), true));
        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
        assertTrue(refused.getMessage().contains("adds [ro] and drops [nodiscard]"), refused.getMessage());
        assertFalse(refused.getMessage().contains("noatime"), "a flag both agree on is not named: "
                + refused.getMessage());
        assertEquals("has the same flags in another order",
                StageRetryRules.flagDifference(List.of("ro", "noatime"), List.of("noatime", "ro")));
        assertEquals("drops [ro]", StageRetryRules.flagDifference(List.of("ro"), List.of()));
    }
}
