package dev.blocknode.os.natives;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Block device ioctls on a loop device over a 64 MiB sparse file: needs root. */
@Tag("host")
class BlockDeviceHostTest {

    private static final long SIZE = 64L * 1024 * 1024;
    private static final long OFFSET = 8192;

    private HostFixture host;
    private LoopDevice loop;

    @BeforeEach
    void setUp() throws Exception {
        host = HostFixture.create();
        loop = host.loop("disk.img", SIZE, false);
    }

    @AfterEach
    void tearDown() throws Exception {
        host.close();
    }

    @Test
    void sizeAndSectorSize() throws Exception {
        assertEquals(SIZE, LinuxNative.blockDeviceSize(loop.device));
        assertEquals(512, LinuxNative.blockSectorSize(loop.device));
    }

    @Test
    void flushWritesDirtyPagesBackThenDropsTheCache() throws Exception {
        // Keep the device open throughout: the last close would sync and drop the cache by itself.
        try (FileChannel device = FileChannel.open(Path.of(loop.device), StandardOpenOption.READ,
                StandardOpenOption.WRITE);
             FileChannel backing = FileChannel.open(loop.backingFile, StandardOpenOption.READ,
                     StandardOpenOption.WRITE)) {
            device.write(bytes("written through the device"), OFFSET);

            LinuxNative.flushBlockBuffers(loop.device);

            // fsync part: the loop driver has written the page to the backing file.
            assertEquals("written through the device", read(backing, 26));

            // BLKFLSBUF part: the device's cached page is gone, so a change made behind the
            // device's back is what the next read through the device sees.
            backing.write(bytes("changed in the backing file"), OFFSET);
            backing.force(true);
            assertEquals("changed in the backing file", read(device, 27));
        }
    }

    @Test
    void aMountedDeviceIsClaimedAndAFreeOneIsNot() throws Exception {
        assertEquals(false, LinuxNative.isBlockDeviceClaimed(loop.device));
        try (FileChannel reader = FileChannel.open(Path.of(loop.device), StandardOpenOption.READ)) {
            assertEquals(false, LinuxNative.isBlockDeviceClaimed(loop.device), "a plain open is no claim");
        }
        Process mkfs = new ProcessBuilder("mkfs.ext4", "-q", loop.device).redirectErrorStream(true).start();
        assertEquals(0, mkfs.waitFor());
        Path target = host.dir("mnt");
        host.mount(loop.device, target, "ext4", 0, null);
        assertEquals(true, LinuxNative.isBlockDeviceClaimed(loop.device), "a mounted filesystem claims it");
    }

    @Test
    void fsyncOfADevice() throws Exception {
        try (FileChannel device = FileChannel.open(Path.of(loop.device), StandardOpenOption.WRITE)) {
            device.write(bytes("x"), 0);
            LinuxNative.fsync(loop.device);
        }
    }

    private static ByteBuffer bytes(String text) {
        return ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
    }

    private static String read(FileChannel channel, int length) throws Exception {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        while (buffer.hasRemaining() && channel.read(buffer, OFFSET + buffer.position()) > 0) {
            // keep reading
        }
        return new String(buffer.array(), 0, buffer.position(), StandardCharsets.US_ASCII);
    }
}
