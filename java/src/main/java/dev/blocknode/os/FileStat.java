package dev.blocknode.os;

import dev.blocknode.os.natives.LinuxNative;

/**
 * What statx(2) says of a path, without following its last symlink: the device holding it, the device it
 * is (for device nodes), its type, whether it is the root of a mount, and its inode number (0 where unknown).
 */
public record FileStat(DeviceNumber device, DeviceNumber rdev, int mode, MountRoot mountRoot, long inode) {

    public enum MountRoot { YES, NO, UNKNOWN }

    public FileStat(DeviceNumber device, DeviceNumber rdev, int mode, MountRoot mountRoot) {
        this(device, rdev, mode, mountRoot, 0);
    }

    /** From the array of {@link LinuxNative#stat} and its relatives. */
    public static FileStat of(long[] s) {
        MountRoot root = switch ((int) s[LinuxNative.STAT_MOUNT_ROOT]) {
            case 1 -> MountRoot.YES;
            case 0 -> MountRoot.NO;
            default -> MountRoot.UNKNOWN;
        };
        return new FileStat(
                new DeviceNumber(s[LinuxNative.STAT_DEV_MAJOR], s[LinuxNative.STAT_DEV_MINOR]),
                new DeviceNumber(s[LinuxNative.STAT_RDEV_MAJOR], s[LinuxNative.STAT_RDEV_MINOR]),
                (int) s[LinuxNative.STAT_MODE], root, s[LinuxNative.STAT_INODE]);
    }

    /** Whether {@code other} is the same file: same device and inode (so a name was not swapped in between). */
    public boolean sameFileAs(FileStat other) {
        return inode == other.inode && device.equals(other.device);
    }

    private static final int S_IFMT = 0170000;
    private static final int S_IFBLK = 0060000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFLNK = 0120000;
    private static final int S_IFSOCK = 0140000;

    public boolean isBlockDevice() {
        return (mode & S_IFMT) == S_IFBLK;
    }

    public boolean isDirectory() {
        return (mode & S_IFMT) == S_IFDIR;
    }

    public boolean isRegularFile() {
        return isRegularFile(mode);
    }

    /** Whether a file of {@code mode} (st_mode) is a regular file. */
    public static boolean isRegularFile(int mode) {
        return (mode & S_IFMT) == S_IFREG;
    }

    public boolean isSymlink() {
        return (mode & S_IFMT) == S_IFLNK;
    }

    public boolean isSocket() {
        return (mode & S_IFMT) == S_IFSOCK;
    }
}
