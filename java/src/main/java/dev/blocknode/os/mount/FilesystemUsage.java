package dev.blocknode.os.mount;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.nio.file.Path;

/**
 * What statvfs(3) says of the filesystem holding a path: sizes in bytes, inode counts, and whether it is
 * mounted read-only now (the kernel turns a filesystem read-only after I/O or filesystem errors).
 */
public record FilesystemUsage(long totalBytes, long freeBytes, long availableBytes, long files, long freeFiles,
                              boolean readOnly) {

    public static FilesystemUsage of(Path path) throws NativeIOException {
        long[] vfs = LinuxNative.statvfs(path.toString());
        long fragment = vfs[LinuxNative.STATVFS_FRSIZE];
        return new FilesystemUsage(vfs[LinuxNative.STATVFS_BLOCKS] * fragment,
                vfs[LinuxNative.STATVFS_BFREE] * fragment, vfs[LinuxNative.STATVFS_BAVAIL] * fragment,
                vfs[LinuxNative.STATVFS_FILES], vfs[LinuxNative.STATVFS_FFREE],
                (vfs[LinuxNative.STATVFS_FLAG] & LinuxNative.ST_RDONLY) != 0);
    }

    public long usedBytes() {
        return totalBytes - freeBytes;
    }
}
