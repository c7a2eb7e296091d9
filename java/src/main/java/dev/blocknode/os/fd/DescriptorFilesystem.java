package dev.blocknode.os.fd;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.natives.LinuxNative;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * The host's {@link OpenedFilesystem}: an O_RDONLY | O_DIRECTORY descriptor, every call an ioctl or fstat of it, its
 * failure re-typed as os's ({@link dev.blocknode.os.SyscallException}).
 */
final class DescriptorFilesystem implements OpenedFilesystem {

    // struct ext4_super_block (fs/ext4/ext4.h): 1024 bytes at byte 1024 of the device, little-endian.
    private static final int EXT4_SUPERBLOCK_OFFSET = 1024;
    private static final int EXT4_SUPERBLOCK_SIZE = 1024;
    private static final int EXT4_BLOCKS_COUNT_LO_AT = 0x04;
    private static final int EXT4_MAGIC_AT = 0x38;
    private static final int EXT4_MAGIC = 0xEF53;
    private static final int EXT4_FEATURE_INCOMPAT_AT = 0x60;
    private static final int EXT4_FEATURE_INCOMPAT_64BIT = 0x80;
    private static final int EXT4_BLOCKS_COUNT_HI_AT = 0x150;

    private final int fd;
    private final Path shown;
    private boolean closed;

    DescriptorFilesystem(int fd, Path shown) {
        this.fd = fd;
        this.shown = shown;
    }

    @Override
    public Path shown() {
        return shown;
    }

    @Override
    public FileStat stat() throws IOException {
        return retyped(() -> FileStat.of(LinuxNative.statAt(fd, "")));
    }

    @Override
    public long blockSize() throws IOException {
        return retyped(() -> LinuxNative.fstatvfs(fd)[LinuxNative.STATVFS_BSIZE]);
    }

    @Override
    public long ext4BlockCount(Path deviceNode) throws IOException {
        return retyped(() -> readExt4BlockCount(deviceNode));
    }

    private long readExt4BlockCount(Path deviceNode) throws IOException {
        DeviceNumber filesystem = stat().device();
        int device = LinuxNative.openBlockDevice(deviceNode.toString()); // O_NOFOLLOW: the node itself, a block device
        try {
            DeviceNumber opened = FileStat.of(LinuxNative.statAt(device, "")).rdev();
            if (!opened.equals(filesystem)) {
                throw new IOException(deviceNode + " is device " + opened + ", not " + filesystem + " where " + shown
                        + " is");
            }
            ByteBuffer superblock = ByteBuffer.allocate(EXT4_SUPERBLOCK_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            try (FileChannel channel = FileChannel.open(Path.of("/proc/self/fd", Integer.toString(device)),
                    StandardOpenOption.READ)) {
                while (superblock.hasRemaining()
                        && channel.read(superblock, EXT4_SUPERBLOCK_OFFSET + superblock.position()) >= 0) {
                    // a block device returns what was asked, short only at its end
                }
            }
            if (superblock.hasRemaining() || (superblock.getShort(EXT4_MAGIC_AT) & 0xffff) != EXT4_MAGIC) {
                throw new IOException(deviceNode + " holds no ext4 superblock");
            }
            long blocks = superblock.getInt(EXT4_BLOCKS_COUNT_LO_AT) & 0xffffffffL;
            if ((superblock.getInt(EXT4_FEATURE_INCOMPAT_AT) & EXT4_FEATURE_INCOMPAT_64BIT) != 0) {
                blocks |= (superblock.getInt(EXT4_BLOCKS_COUNT_HI_AT) & 0xffffffffL) << 32;
            }
            return blocks;
        } finally {
            LinuxNative.close(device);
        }
    }

    @Override
    public XfsGeometry xfsGeometry() throws IOException {
        long[] g = retyped(() -> LinuxNative.xfsGeometry(fd));
        return new XfsGeometry(g[LinuxNative.XFS_GEOMETRY_BLOCK_SIZE], g[LinuxNative.XFS_GEOMETRY_DATA_BLOCKS],
                (int) g[LinuxNative.XFS_GEOMETRY_IMAXPCT]);
    }

    @Override
    public void xfsGrowData(long newBlocks, int imaxpct) throws IOException {
        retyped(() -> LinuxNative.xfsGrowData(fd, newBlocks, imaxpct));
    }

    @Override
    public void ext4Resize(long newBlocks) throws IOException {
        retyped(() -> LinuxNative.ext4Resize(fd, newBlocks));
    }

    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            retyped(() -> LinuxNative.close(fd));
        }
    }
}
