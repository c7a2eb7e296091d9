package dev.blocknode.os.fd;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.nio.file.Path;

/** The host's {@link OpenedFilesystem}: an O_RDONLY | O_DIRECTORY descriptor, every call an ioctl or fstat of it. */
final class DescriptorFilesystem implements OpenedFilesystem {

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
        return FileStat.of(LinuxNative.statAt(fd, ""));
    }

    @Override
    public long blockSize() throws IOException {
        return LinuxNative.fstatvfs(fd)[LinuxNative.STATVFS_BSIZE];
    }

    @Override
    public XfsGeometry xfsGeometry() throws IOException {
        long[] g = LinuxNative.xfsGeometry(fd);
        return new XfsGeometry(g[LinuxNative.XFS_GEOMETRY_BLOCK_SIZE], g[LinuxNative.XFS_GEOMETRY_DATA_BLOCKS],
                (int) g[LinuxNative.XFS_GEOMETRY_IMAXPCT]);
    }

    @Override
    public void xfsGrowData(long newBlocks, int imaxpct) throws IOException {
        LinuxNative.xfsGrowData(fd, newBlocks, imaxpct);
    }

    @Override
    public void ext4Resize(long newBlocks) throws IOException {
        LinuxNative.ext4Resize(fd, newBlocks);
    }

    @Override
    public void close() throws NativeIOException {
        if (!closed) {
            closed = true;
            LinuxNative.close(fd);
        }
    }
}
