package dev.blocknode.volume;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.ScriptedTransport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.encryption.EncryptionKeys;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.MkfsOptions;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A NodeStageVolume request read once into its {@link StagePlan}: what the stage reads from it, and each input it
 * refuses with the INVALID_ARGUMENT message the stage has always given, the first problem first.
 */
class StagePlanUnitTest {

    private static final String VOLUME = "vol-1";
    private static final String SECRET = "correct horse battery staple";

    @TempDir
    Path temp;

    private KubeletPaths paths;
    private StageRequestRules rules;
    private Path staging;

    @BeforeEach
    void wire() throws IOException {
        Path root = Files.createDirectories(temp.resolve("kubelet")).toRealPath();
        paths = new KubeletPaths(root);
        rules = new StageRequestRules(new Transports(List.of(new ScriptedTransport())));
        staging = root.resolve("plugins/kubernetes.io/csi/block.csi.blocknode.dev/" + VOLUME + "/globalmount");
    }

    private static VolumeCapability mount(String fsType) {
        return new VolumeCapability(AccessType.Mount.parsed(fsType, List.of()), AccessMode.SINGLE_NODE_WRITER);
    }

    private static VolumeCapability block() {
        return new VolumeCapability(new AccessType.Block(), AccessMode.SINGLE_NODE_WRITER);
    }

    private StagePlan plan(String stagingPath, VolumeCapability capability, Map<String, String> moreContext,
                           Secrets secrets) throws VolumeException {
        Map<String, String> context = new HashMap<>(moreContext);
        context.putIfAbsent(ScriptedTransport.DEVICE_KEY, "vdb");
        return StagePlan.of(new Requests.Stage(VOLUME, stagingPath, capability, context, Map.of(), secrets), paths,
                rules, FilesystemType.EXT4);
    }

    private StagePlan plan(VolumeCapability capability, Map<String, String> moreContext) throws VolumeException {
        return plan(staging.toString(), capability, moreContext, Secrets.NONE);
    }

    private static void assertInvalid(String message, StagePlanStep step) {
        VolumeException refused = assertThrows(VolumeException.class, step::run);
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
        assertEquals(message, refused.getMessage());
    }

    private interface StagePlanStep {
        void run() throws VolumeException;
    }

    @Test
    void aMountPlanHoldsWhatTheStageReads() throws Exception {
        StagePlan plan = plan(mount("xfs"), Map.of(FilesystemKeys.MKFS_OPTIONS, " -m reflink=0 ",
                FilesystemKeys.FSCK, "off"));

        assertEquals(VOLUME, plan.volumeId());
        assertEquals(staging, plan.staging());
        assertEquals(ScriptedTransport.NAME, plan.transport().name());
        assertEquals(Optional.of(FilesystemType.XFS), plan.requestedFs());
        StagePlan.FilesystemPlan filesystem = plan.filesystem().orElseThrow();
        assertEquals(FilesystemType.XFS, filesystem.formatsAs());
        assertEquals(MkfsOptions.parse("-m reflink=0", FilesystemType.XFS).flags(), filesystem.mkfsOptions().flags());
        assertEquals(Optional.of("-m reflink=0"), filesystem.mkfsText());
        assertFalse(filesystem.fsck());
        assertFalse(plan.encrypted());
    }

    @Test
    void aMountNamingNoFilesystemIsPlannedForTheNodesDefault() throws Exception {
        StagePlan.FilesystemPlan filesystem = plan(mount(""), Map.of()).filesystem().orElseThrow();

        assertEquals(Optional.empty(), filesystem.requested());
        assertEquals(FilesystemType.EXT4, filesystem.formatsAs());
        assertTrue(filesystem.mkfsOptions().isEmpty());
        assertTrue(filesystem.fsck(), "the preen is on unless the volume turns it off");
    }

    @Test
    void aFormatOfAnotherTypeThanPlannedParsesTheOptionsForThatType() throws Exception {
        // A retry naming no fs_type that finishes an interrupted xfs format on an ext4 node: the options checked for
        // ext4 are read again for xfs, and refused as that format has always refused them, naming xfs.
        StagePlan.FilesystemPlan filesystem = plan(mount(""), Map.of(FilesystemKeys.MKFS_OPTIONS, "-b 4096"))
                .filesystem().orElseThrow();
        String grammar = assertThrows(IllegalArgumentException.class,
                () -> MkfsOptions.parse("-b 4096", FilesystemType.XFS)).getMessage();

        assertEquals(MkfsOptions.parse("-b 4096", FilesystemType.EXT4).flags(),
                filesystem.mkfsOptionsFor(FilesystemType.EXT4).flags());
        assertInvalid("volume_context.mkfsOptions (for xfs): " + grammar,
                () -> filesystem.mkfsOptionsFor(FilesystemType.XFS));
    }

    @Test
    void aBlockVolumeHasNoFilesystemAndIgnoresItsKeys() throws Exception {
        StagePlan plan = plan(block(), Map.of(FilesystemKeys.MKFS_OPTIONS, "--no-such-option",
                FilesystemKeys.FSCK, "sometimes"));

        assertEquals(Optional.empty(), plan.filesystem());
        assertEquals(Optional.empty(), plan.requestedFs());
    }

    @Test
    void anEncryptedVolumeCarriesItsPassphraseAndNeverPrintsIt() throws Exception {
        StagePlan plan = plan(staging.toString(), mount("ext4"), Map.of(EncryptionKeys.ENCRYPTION, "luks2"),
                new Secrets(Map.of(EncryptionKeys.PASSPHRASE, SECRET)));

        assertTrue(plan.encrypted());
        assertTrue(plan.passphrase().isPresent());
        assertFalse(plan.toString().contains(SECRET), plan.toString());
        assertFalse(plan.toString().contains("horse"), plan.toString());
        assertTrue(plan.toString().contains(VOLUME), plan.toString());
    }

    @Test
    void aStagingPathOutsideTheKubeletRootIsRefused() {
        assertInvalid("staging_target_path must be an absolute path, got \"relative/globalmount\"",
                () -> plan("relative/globalmount", mount("ext4"), Map.of(), Secrets.NONE));
    }

    @Test
    void anUnknownEncryptionIsRefused() {
        assertInvalid("volume_context.encryption must be luks2 or none",
                () -> plan(mount("ext4"), Map.of(EncryptionKeys.ENCRYPTION, "aes")));
    }

    @Test
    void aContextNamingNoDeviceIsRefused() {
        assertInvalid("volume_context names no device: give \"transport\" or one of scripted [scriptedDevice]",
                () -> StagePlan.of(new Requests.Stage(VOLUME, staging.toString(), mount("ext4"), Map.of(), Map.of(),
                        Secrets.NONE), paths, rules, FilesystemType.EXT4));
    }

    @Test
    void aFilesystemThisPluginDoesNotMakeIsRefused() {
        assertInvalid("volume_capability.mount.fs_type is not a filesystem this plugin mounts; supported: ext4, xfs",
                () -> plan(mount("btrfs"), Map.of()));
    }

    @Test
    void mkfsOptionsTheFilesystemDoesNotTakeAreRefused() {
        String grammar = assertThrows(IllegalArgumentException.class,
                () -> MkfsOptions.parse("-m reflink=0", FilesystemType.EXT4)).getMessage();

        assertInvalid("volume_context.mkfsOptions (for ext4): " + grammar,
                () -> plan(mount(""), Map.of(FilesystemKeys.MKFS_OPTIONS, "-m reflink=0")));
    }

    @Test
    void anUnknownFsckIsRefused() {
        assertInvalid("volume_context.fsck must be preen or off",
                () -> plan(mount("ext4"), Map.of(FilesystemKeys.FSCK, "always")));
    }

    @Test
    void anEncryptedVolumeWithoutItsPassphraseIsRefused() {
        assertInvalid("volume_context.encryption is luks2, but the NodeStageVolume secrets hold no"
                        + " encryptionPassphrase (or an empty one): set the StorageClass's or PV's node-stage secret",
                () -> plan(mount("ext4"), Map.of(EncryptionKeys.ENCRYPTION, "luks2")));
    }

    @Test
    void theFirstProblemIsTheOneReported() {
        // the transport's keys before the filesystem's, the filesystem's before the passphrase
        assertInvalid("volume_context.encryption must be luks2 or none",
                () -> plan(mount("ext4"), Map.of(EncryptionKeys.ENCRYPTION, "aes", FilesystemKeys.FSCK, "always")));
        assertInvalid("volume_context.fsck must be preen or off",
                () -> plan(mount("ext4"), Map.of(EncryptionKeys.ENCRYPTION, "luks2", FilesystemKeys.FSCK, "always")));
    }

    @Test
    void blocknodePvReadsTheSameStepsAndNamesEveryProblemTheStagesFirstFirst() throws Exception {
        // the filesystem keys' first problem, then the passphrase's: one reading, so pv and a stage cannot drift
        Map<String, String> context = Map.of(ScriptedTransport.DEVICE_KEY, "vdb", EncryptionKeys.ENCRYPTION, "luks2",
                FilesystemKeys.MKFS_OPTIONS, "-m reflink=0", FilesystemKeys.FSCK, "always");
        Requests.Stage request = new Requests.Stage(VOLUME, staging.toString(), mount("ext4"), context, Map.of(),
                Secrets.NONE);
        String stages = assertThrows(VolumeException.class,
                () -> StagePlan.of(request, paths, rules, FilesystemType.EXT4)).getMessage();

        StageRequestRules.Findings pv = rules.problems(request, false);
        assertEquals(Optional.of(ScriptedTransport.NAME), pv.transport());
        assertEquals(2, pv.problems().size(), pv.problems().toString());
        assertEquals(stages, pv.problems().get(0));
        assertTrue(pv.problems().get(1).startsWith("volume_context.encryption is luks2, but the NodeStageVolume"
                + " secrets hold no encryptionPassphrase"), pv.problems().toString());
        // A PV naming its Secret: the passphrase in it is the stage's to check.
        assertEquals(List.of(stages), rules.problems(request, true).problems());
        // A PV naming no fsType: its mkfs options must suit one filesystem, ext4 or xfs, as the node's default may be.
        Requests.Stage noFsType = new Requests.Stage(VOLUME, staging.toString(), mount(""),
                Map.of(ScriptedTransport.DEVICE_KEY, "vdb", FilesystemKeys.MKFS_OPTIONS, "-m reflink=0"), Map.of(),
                Secrets.NONE);
        assertEquals(List.of(), rules.problems(noFsType, false).problems());
    }
}
