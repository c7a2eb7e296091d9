package dev.blocknode.os.fd;

import dev.blocknode.os.FileStat;

import java.io.IOException;

/**
 * A directory opened for reading from an {@link OpenedPath} ({@link OpenedPath#reopenForIoctl}): the descriptor
 * the filesystem ioctls take, which an O_PATH descriptor does not. Each call acts on the filesystem this very
 * directory is on, never on one found by name: growing a filesystem is a mount's business, and a mount found by
 * its path is whatever a writer under the kubelet root swapped into that path. Thin: what to check and how many
 * blocks to ask for is the caller's.
 */
public interface OpenedFilesystem extends AutoCloseable {

    /** The path the directory was opened as: for messages only. */
    java.nio.file.Path shown();

    /** statx of the opened directory itself, to check that it is still what was opened as O_PATH. */
    FileStat stat() throws IOException;

    /** The filesystem's block size (statfs f_bsize): ext4's unit for {@link #ext4Resize}. */
    long blockSize() throws IOException;

    /**
     * The block count in the superblock of the ext4 this directory is on, read (through the page cache the mounted
     * filesystem writes its superblock to) from {@code deviceNode}, which must be the node of the very device the
     * directory's filesystem is on (its st_rdev is checked against this directory's st_dev), as resize2fs reads it
     * to see that there is nothing to do. Throws when the node is another device or holds no ext4 superblock.
     */
    long ext4BlockCount(java.nio.file.Path deviceNode) throws IOException;

    /** XFS_IOC_FSGEOMETRY_V1; a {@link dev.blocknode.os.SyscallException} (ENOTTY) when not on xfs. */
    XfsGeometry xfsGeometry() throws IOException;

    /** XFS_IOC_FSGROWFSDATA: the data section to {@code newBlocks} blocks, inode space limit {@code imaxpct}. */
    void xfsGrowData(long newBlocks, int imaxpct) throws IOException;

    /** EXT4_IOC_RESIZE_FS: the filesystem to {@code newBlocks} blocks (the kernel never shrinks it). */
    void ext4Resize(long newBlocks) throws IOException;

    @Override
    void close() throws IOException;

    /** What XFS_IOC_FSGEOMETRY says that growing needs: block size in bytes, data blocks now, imaxpct. */
    record XfsGeometry(long blockSize, long dataBlocks, int imaxpct) {
    }
}
