package dev.blocknode.os;

import dev.blocknode.os.natives.LinuxNative;

/**
 * What statvfs(3) says of a filesystem: sizes in bytes, inode counts, and whether it is mounted read-only now
 * (the kernel turns a filesystem read-only after I/O or filesystem errors).
 */
public record FilesystemUsage(long totalBytes, long freeBytes, long availableBytes, long files, long freeFiles,
                              boolean readOnly) {

    /** From the array {@link LinuxNative#statvfs} and {@link LinuxNative#fstatvfs} return. */
    public static FilesystemUsage of(long[] vfs) {
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
