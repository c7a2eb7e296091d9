package dev.blocknode.lifecycle;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Random;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The plugin never formats over data: not another filesystem, not a partition table, not unknown bytes. */
@Tag("host")
class DataSafetyHostTest {

    private static final long SIZE = 320L << 20;

    @Test
    void dataSurvivesUnstageAndRestageAndAnotherFsTypeIsRefused() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("keep", SIZE);
            Path staging = plugin.stagingPath("keep");
            Path target = plugin.targetPath("pod", "keep");
            byte[] data = new byte[3 << 20];
            new Random(42).nextBytes(data);

            plugin.client().node().nodeStageVolume(stage("keep", loop.device(), staging, mount("ext4")));
            plugin.client().node().nodePublishVolume(publish("keep", staging, target, mount("ext4"), false));
            Files.write(target.resolve("payload.bin"), data);
            String checksum = sha256(target.resolve("payload.bin"));
            plugin.client().node().nodeUnpublishVolume(unpublish("keep", target));
            plugin.client().node().nodeUnstageVolume(unstage("keep", staging));

            StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeStageVolume(stage("keep", loop.device(), staging, mount("xfs"))));
            assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
            assertTrue(refused.getStatus().getDescription().contains("ext4"), refused.getMessage());
            assertFalse(dev.blocknode.os.natives.LinuxNative.isMountPoint(staging.toString()));
            plugin.client().node().nodeUnstageVolume(unstage("keep", staging)); // kubelet's cleanup of the attempt

            // Empty fs_type: use what is there.
            plugin.client().node().nodeStageVolume(stage("keep", loop.device(), staging, mount("")));
            plugin.client().node().nodePublishVolume(publish("keep", staging, target, mount(""), false));
            assertEquals(checksum, sha256(target.resolve("payload.bin")), "data intact after restage");
            plugin.client().node().nodeUnpublishVolume(unpublish("keep", target));
            plugin.client().node().nodeUnstageVolume(unstage("keep", staging));
        }
    }

    @Test
    void unknownDataIsNeverFormatted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("junk", SIZE);
            byte[] junk = new byte[8192];
            new Random(7).nextBytes(junk);
            try (RandomAccessFile out = new RandomAccessFile(loop.device().toFile(), "rw")) {
                out.seek(1024 * 100);
                out.write(junk);
                out.getFD().sync();
            }
            Path staging = plugin.stagingPath("junk");
            StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeStageVolume(stage("junk", loop.device(), staging, mount("ext4"))));
            assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
            assertTrue(refused.getStatus().getDescription().contains("unknown"), refused.getMessage());
            byte[] back = new byte[junk.length];
            try (RandomAccessFile in = new RandomAccessFile(loop.device().toFile(), "r")) {
                in.seek(1024 * 100);
                in.readFully(back);
            }
            assertArrayEquals(junk, back, "the device was not touched");
            plugin.client().node().nodeUnstageVolume(unstage("junk", staging));
        }
    }

    @Test
    void aPartitionTableIsNeverFormatted() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("parts", SIZE);
            writeMbrPartitionTable(loop.device());
            Path staging = plugin.stagingPath("parts");
            StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeStageVolume(stage("parts", loop.device(), staging, mount("ext4"))));
            assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
            assertTrue(refused.getStatus().getDescription().contains("partition table"), refused.getMessage());
            String probe = new ProcessCommandRunner().run(Command.of("blkid", "-p", "-o", "export",
                    loop.device().toString())).stdout();
            assertTrue(probe.contains("PTTYPE=dos"), "still the partition table: " + probe);
            plugin.client().node().nodeUnstageVolume(unstage("parts", staging));
        }
    }

    @Test
    void aDeviceInUseElsewhereIsNeverStaged() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("busy", SIZE);
            new ProcessCommandRunner().runChecked(Command.of("mkfs.ext4", "-q", loop.device().toString()));
            Path elsewhere = plugin.kubeletRoot().resolve("mounted-by-hand");
            Files.createDirectories(elsewhere);
            dev.blocknode.os.natives.LinuxNative.mount(loop.device().toString(), elsewhere.toString(), "ext4", 0, null);
            try {
                Path staging = plugin.stagingPath("busy");
                for (var cap : java.util.List.of(mount("ext4"), dev.blocknode.testing.CsiRequests.block())) {
                    StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> plugin.client()
                            .node().nodeStageVolume(stage("busy", loop.device(), staging, cap)));
                    assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
                    assertTrue(refused.getStatus().getDescription().contains("mounted at " + elsewhere),
                            refused.getMessage());
                    plugin.client().node().nodeUnstageVolume(unstage("busy", staging));
                }
                assertFalse(dev.blocknode.os.natives.LinuxNative.isMountPoint(staging.toString()));
            } finally {
                plugin.host().mounter().unmount(elsewhere);
            }
        }
    }

    /** One primary Linux partition from sector 2048 to the end, written by hand (no fdisk on the host). */
    private static void writeMbrPartitionTable(Path device) throws Exception {
        byte[] sector = new byte[512];
        int entry = 446;
        sector[entry + 4] = (byte) 0x83;
        putLittleEndian(sector, entry + 8, 2048);
        putLittleEndian(sector, entry + 12, (int) (SIZE / 512 - 2048));
        sector[510] = 0x55;
        sector[511] = (byte) 0xAA;
        try (RandomAccessFile out = new RandomAccessFile(device.toFile(), "rw")) {
            out.write(sector);
            out.getFD().sync();
        }
    }

    private static void putLittleEndian(byte[] buffer, int offset, int value) {
        for (int i = 0; i < 4; i++) {
            buffer[offset + i] = (byte) (value >>> (8 * i));
        }
    }

    private static String sha256(Path file) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
    }
}
