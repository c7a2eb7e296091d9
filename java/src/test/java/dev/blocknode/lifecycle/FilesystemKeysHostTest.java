package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a caller sees of the filesystem keys through NodeStageVolume, on real loop devices with the real e2fsck,
 * mke2fs and mkfs.xfs: the preen of an ext4 found on the device (and its refusal of one that needs a manual
 * repair), a volume's mkfs options on a blank device only, and xfs nouuid for a block-level copy.
 */
@Tag("host")
class FilesystemKeysHostTest {

    private static final long SIZE = 64L << 20;
    private static final long XFS_SIZE = 320L << 20; // mkfs.xfs makes nothing under 300 MB
    private static final ProcessCommandRunner COMMANDS = new ProcessCommandRunner();

    private static String run(String... argv) throws IOException {
        return COMMANDS.runChecked(Command.of(argv).withTimeout(Duration.ofSeconds(60))).stdout();
    }

    /** An ext4 with one file, then {@code debugfs -w} requests on it (the file system unmounted throughout). */
    private static void ext4WithAFile(LoopDevice loop, Path scratch, String... debugfsRequests) throws IOException {
        run("mkfs.ext4", "-q", loop.device().toString());
        Files.writeString(scratch, "kept");
        run("debugfs", "-w", "-R", "write " + scratch + " kept.txt", loop.device().toString());
        for (String request : debugfsRequests) {
            run("debugfs", "-w", "-R", request, loop.device().toString());
        }
    }

    private static String superblockField(LoopDevice loop, String field) throws IOException {
        for (String line : run("dumpe2fs", "-h", loop.device().toString()).split("\n")) {
            if (line.startsWith(field + ":")) {
                return line.substring(field.length() + 1).strip();
            }
        }
        throw new AssertionError("dumpe2fs -h shows no " + field);
    }

    private static NodeStageVolumeRequest withContext(NodeStageVolumeRequest request, String key, String value) {
        return request.toBuilder().putVolumeContext(key, value).build();
    }

    private static void assertNoRecords(PluginHarness plugin) throws IOException {
        try (var records = Files.list(plugin.stateDir().resolve("volumes"))) {
            assertEquals(0, records.count(), "no staging record is left");
        }
    }

    @Test
    void anExt4NotCleanlyUnmountedIsPreenedThenMounted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("preen", SIZE);
            // Not clean, last checked in 2020: e2fsck -p checks it whole and records the check.
            ext4WithAFile(loop, plugin.kubeletRoot().resolveSibling("kept.src"), "ssv state 0",
                    "ssv lastcheck 20200101");
            Path staging = plugin.stagingPath("preen");

            plugin.client().node().nodeStageVolume(stage("preen", loop.device(), staging, mount("ext4")));

            assertEquals("kept", Files.readString(staging.resolve("kept.txt")));
            plugin.client().node().nodeUnstageVolume(unstage("preen", staging));
            assertFalse(superblockField(loop, "Last checked").contains("2020"), "e2fsck -p checked it");
        }
    }

    @Test
    void anExt4ThatNeedsAManualRepairIsRefusedAndNothingIsLeft() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("broken", SIZE);
            // The root inode cleared, and the errors flag set so that a preen looks: nothing -p may repair.
            ext4WithAFile(loop, plugin.kubeletRoot().resolveSibling("kept.src"), "clri <2>", "ssv state 2");
            Path staging = plugin.stagingPath("broken");

            StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeStageVolume(stage("broken", loop.device(), staging, mount("ext4"))));

            assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
            String message = refused.getStatus().getDescription();
            assertTrue(message.contains("Root inode is not a directory") && message.contains("RUN fsck MANUALLY")
                    && message.contains(loop.device().toString()), message);
            assertFalse(LinuxNative.isMountPoint(staging.toString()));
            HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());
            assertNoRecords(plugin);
        }
    }

    @Test
    void aVolumeThatTurnsThePreenOffIsMountedUnchecked() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("nofsck", SIZE);
            ext4WithAFile(loop, plugin.kubeletRoot().resolveSibling("kept.src"), "ssv state 0",
                    "ssv lastcheck 20200101");
            Path staging = plugin.stagingPath("nofsck");

            plugin.client().node().nodeStageVolume(withContext(stage("nofsck", loop.device(), staging,
                    mount("ext4")), "fsck", "off"));

            assertEquals("kept", Files.readString(staging.resolve("kept.txt")));
            plugin.client().node().nodeUnstageVolume(unstage("nofsck", staging));
            assertTrue(superblockField(loop, "Last checked").contains("2020"), "no e2fsck ran");
        }
    }

    @Test
    void mkfsOptionsShapeANewFilesystemAndAreNotUsedOnAFormattedOne() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice ext4 = plugin.newLoopDevice("opts4", SIZE);
            LoopDevice xfs = plugin.newLoopDevice("optsx", XFS_SIZE);
            Path ext4Staging = plugin.stagingPath("opts4");
            Path xfsStaging = plugin.stagingPath("optsx");

            plugin.client().node().nodeStageVolume(withContext(stage("opts4", ext4.device(), ext4Staging,
                    mount("ext4")), "mkfsOptions", "-b 1024 -L bn-data -E stride=4 -m 0"));
            plugin.client().node().nodeStageVolume(withContext(stage("optsx", xfs.device(), xfsStaging,
                    mount("xfs")), "mkfsOptions", "-L bn-xfs -m reflink=0"));

            assertEquals("1024", superblockField(ext4, "Block size"));
            assertEquals("bn-data", superblockField(ext4, "Filesystem volume name"));
            assertEquals("4", superblockField(ext4, "RAID stride"));
            assertEquals("0", superblockField(ext4, "Reserved block count"));
            assertEquals("bn-xfs", run("blkid", "-p", "-o", "value", "-s", "LABEL", xfs.device().toString()).strip());
            assertTrue(run("xfs_info", xfsStaging.toString()).contains("reflink=0"));

            // Staged again with other options: the filesystem is found as it is, and the options are not used.
            plugin.client().node().nodeUnstageVolume(unstage("opts4", ext4Staging));
            plugin.client().node().nodeStageVolume(withContext(stage("opts4", ext4.device(), ext4Staging,
                    mount("ext4")), "mkfsOptions", "-b 4096 -L other"));
            assertEquals("1024", superblockField(ext4, "Block size"));
            assertEquals("bn-data", superblockField(ext4, "Filesystem volume name"));

            plugin.client().node().nodeUnstageVolume(unstage("opts4", ext4Staging));
            plugin.client().node().nodeUnstageVolume(unstage("optsx", xfsStaging));
        }
    }

    @Test
    void badMkfsOptionsAreInvalidArgumentAndTheDeviceStaysBlank() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("badopts", SIZE);
            Path staging = plugin.stagingPath("badopts");
            for (String options : new String[]{"-F", "-J device=/dev/sda", "-d /etc", "-O journal_dev"}) {
                StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> plugin.client()
                        .node().nodeStageVolume(withContext(stage("badopts", loop.device(), staging, mount("ext4")),
                                "mkfsOptions", options)));
                assertEquals(Status.Code.INVALID_ARGUMENT, refused.getStatus().getCode(), refused.getMessage());
                assertTrue(refused.getStatus().getDescription().contains("volume_context.mkfsOptions"),
                        refused.getMessage());
            }
            CommandResult probe = COMMANDS.run(Command.of("blkid", "-p", loop.device().toString()));
            assertEquals(2, probe.exitCode(), "blkid finds nothing: the device was never formatted");
            assertNoRecords(plugin);
        }
    }

    @Test
    void aBlockCopyOfAStagedXfsIsMountedWithNouuidOnlyWhileTheOriginalIsMounted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice original = plugin.newLoopDevice("orig", XFS_SIZE);
            LoopDevice copy = plugin.newLoopDevice("copy", XFS_SIZE);
            Path originalStaging = plugin.stagingPath("orig");
            Path copyStaging = plugin.stagingPath("copy");
            plugin.client().node().nodeStageVolume(stage("orig", original.device(), originalStaging, mount("xfs")));
            Files.writeString(originalStaging.resolve("data.txt"), "original");
            run("sync", "-f", originalStaging.resolve("data.txt").toString());
            // A snapshot as an array takes it: every block of the staged volume, past the page cache.
            run("dd", "if=" + original.device(), "of=" + copy.device(), "bs=1M", "iflag=direct", "oflag=direct",
                    "status=none");

            plugin.client().node().nodeStageVolume(stage("copy", copy.device(), copyStaging, mount("xfs")));
            assertEquals("original", Files.readString(copyStaging.resolve("data.txt")));
            assertTrue(hasNouuid(copyStaging), "the copy is mounted with nouuid");
            assertFalse(hasNouuid(originalStaging), "the original is not");

            // The original goes first; the copy staged again needs no nouuid, and the original after it does.
            plugin.client().node().nodeUnstageVolume(unstage("orig", originalStaging));
            plugin.client().node().nodeUnstageVolume(unstage("copy", copyStaging));
            plugin.client().node().nodeStageVolume(stage("copy", copy.device(), copyStaging, mount("xfs")));
            assertFalse(hasNouuid(copyStaging), "alone, the copy needs no nouuid");
            plugin.client().node().nodeStageVolume(stage("orig", original.device(), originalStaging, mount("xfs")));
            assertTrue(hasNouuid(originalStaging), "now the original shares a mounted UUID");
            // A repeated stage (kubelet's retry, or after a plugin restart) finds the mount as it is.
            plugin.client().node().nodeStageVolume(stage("orig", original.device(), originalStaging, mount("xfs")));

            plugin.client().node().nodeUnstageVolume(unstage("orig", originalStaging));
            plugin.client().node().nodeUnstageVolume(unstage("copy", copyStaging));
        }
    }

    private static boolean hasNouuid(Path staging) throws IOException {
        String line = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .filter(l -> l.contains(" " + staging + " ")).findFirst()
                .orElseThrow(() -> new AssertionError(staging + " is not mounted"));
        return line.contains("nouuid");
    }
}
