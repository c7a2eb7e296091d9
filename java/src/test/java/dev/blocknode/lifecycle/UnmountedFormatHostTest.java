package dev.blocknode.lifecycle;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
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
import java.util.Optional;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * No mkfsOptions value wedges a LUN, with the real mke2fs, mkfs.xfs and kernel: an option the tool
 * refuses is INVALID_ARGUMENT that quotes it, with nothing written; a filesystem the tool makes and this kernel cannot
 * mount is INVALID_ARGUMENT too, and taken off again; in every case the LUN is as blank as it was, and the corrected
 * stage (the PV without the option) formats and mounts it. Which options this kernel refuses is read from the kernel,
 * never assumed of the machine.
 */
@Tag("host")
class UnmountedFormatHostTest {

    private static final long SIZE = 64L << 20;
    private static final long XFS_SIZE = 320L << 20; // mkfs.xfs makes nothing under 300 MB
    private static final ProcessCommandRunner COMMANDS = new ProcessCommandRunner();

    @Test
    void aBlockSizeMke2fsRefusesIsInvalidArgumentQuotingItAndTheLunStaysBlank() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("bigblocks", SIZE);
            Optional<StatusRuntimeException> refused = stageWith(plugin, loop, "bigblocks", "ext4", "-b 65536");

            assertEquals(Status.Code.INVALID_ARGUMENT, refused.orElseThrow().getStatus().getCode());
            String message = refused.get().getStatus().getDescription();
            assertTrue(message.contains("mkfsOptions [-b]: mkfs.ext4 refuses them (exit 1)")
                    && message.contains("65536-byte blocks too big for system")
                    && message.contains("nothing was written"), message);
            assertCorrectedStageFormatsTheBlankLun(plugin, loop, "bigblocks", "ext4");
        }
    }

    /** The kernel's ext4 takes casefold only when it was built with Unicode support: then it mounts, else EINVAL. */
    @Test
    void casefoldOnAKernelWithoutItIsTakenOffAgainAndWorksOnOneWithIt() throws Exception {
        boolean kernelHasCasefold = Files.exists(Path.of("/sys/fs/ext4/features/casefold"));
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("casefold", SIZE);
            Optional<StatusRuntimeException> refused = stageWith(plugin, loop, "casefold", "ext4",
                    "-O casefold -E encoding=utf8");

            if (kernelHasCasefold) {
                assertTrue(refused.isEmpty(), () -> "this kernel mounts casefold: " + refused.get().getMessage());
                plugin.client().node().nodeUnstageVolume(unstage("casefold", plugin.stagingPath("casefold")));
                return;
            }
            assertEquals(Status.Code.INVALID_ARGUMENT, refused.orElseThrow().getStatus().getCode());
            String message = refused.get().getStatus().getDescription();
            assertTrue(message.contains("failed with EINVAL: this node's kernel refuses the filesystem that"
                    + " volume_context.mkfsOptions [-O, -E] made") && message.contains("is blank again"), message);
            assertCorrectedStageFormatsTheBlankLun(plugin, loop, "casefold", "ext4");
        }
    }

    /**
     * An xfs block bigger than the page: mkfs.xfs makes it; a kernel without large block sizes (before 6.12) refuses
     * the mount. Either way, nothing is wedged.
     */
    @Test
    void anXfsBlockBiggerThanThePageNeverWedgesTheLun() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("xfs64k", XFS_SIZE);
            Optional<StatusRuntimeException> refused = stageWith(plugin, loop, "xfs64k", "xfs", "-b size=65536");

            if (refused.isEmpty()) {
                plugin.client().node().nodeUnstageVolume(unstage("xfs64k", plugin.stagingPath("xfs64k")));
                return;
            }
            assertEquals(Status.Code.INVALID_ARGUMENT, refused.get().getStatus().getCode(), refused.get().getMessage());
            assertCorrectedStageFormatsTheBlankLun(plugin, loop, "xfs64k", "xfs");
        }
    }

    /** NodeStageVolume with these mkfsOptions; the refusal, if it was refused. */
    private static Optional<StatusRuntimeException> stageWith(PluginHarness plugin, LoopDevice loop, String volume,
                                                              String fsType, String mkfsOptions) throws IOException {
        try {
            plugin.client().node().nodeStageVolume(stage(volume, loop.device(), plugin.stagingPath(volume),
                    mount(fsType)).toBuilder().putVolumeContext("mkfsOptions", mkfsOptions).build());
            return Optional.empty();
        } catch (StatusRuntimeException refused) {
            return Optional.of(refused);
        }
    }

    /**
     * What the refusal left: no record, no mount, a LUN that blkid finds blank; then the PV without the option, as the
     * operator corrects it, stages (a filesystem made afresh) and unstages.
     */
    private static void assertCorrectedStageFormatsTheBlankLun(PluginHarness plugin, LoopDevice loop, String volume,
                                                               String fsType) throws IOException {
        HostAssertions.assertNoMountsUnder(plugin.kubeletRoot());
        try (var records = Files.list(plugin.stateDir().resolve("volumes"))) {
            assertEquals(0, records.count(), "no staging record is left");
        }
        int blkid = COMMANDS.run(Command.of("blkid", "-p", loop.device().toString())
                .withTimeout(Duration.ofSeconds(30))).exitCode();
        assertEquals(2, blkid, "blkid finds nothing on the LUN: blank, as the stage found it");

        Path staging = plugin.stagingPath(volume);
        plugin.client().node().nodeStageVolume(stage(volume, loop.device(), staging, mount(fsType)));
        assertEquals(fsType, COMMANDS.run(Command.of("blkid", "-p", "-s", "TYPE", "-o", "value",
                loop.device().toString()).withTimeout(Duration.ofSeconds(30))).stdout().strip());
        plugin.client().node().nodeUnstageVolume(unstage(volume, staging));
    }
}
