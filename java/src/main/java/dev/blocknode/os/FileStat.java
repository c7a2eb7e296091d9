package dev.blocknode.os;

/**
 * What statx(2) says of a path, without following its last symlink: the device holding it, the device it
 * is (for device nodes), its type, and whether it is the root of a mount.
 */
public record FileStat(DeviceNumber device, DeviceNumber rdev, int mode, MountRoot mountRoot) {

    public enum MountRoot { YES, NO, UNKNOWN }

    private static final int S_IFMT = 0170000;
    private static final int S_IFBLK = 0060000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFLNK = 0120000;

    public boolean isBlockDevice() {
        return (mode & S_IFMT) == S_IFBLK;
    }

    public boolean isDirectory() {
        return (mode & S_IFMT) == S_IFDIR;
    }

    public boolean isRegularFile() {
        return (mode & S_IFMT) == S_IFREG;
    }

    public boolean isSymlink() {
        return (mode & S_IFMT) == S_IFLNK;
    }
}
