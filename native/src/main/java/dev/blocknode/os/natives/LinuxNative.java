package dev.blocknode.os.natives;

/**
 * Every native method of blocknode, and nothing else: thin wrappers over Linux system calls that
 * the JDK does not offer. The implementations live in libblocknode.so (src/main/c), which binds
 * them with RegisterNatives when {@link NativeLibrary} loads it; this class loads it on first use.
 *
 * <p>Failures are thrown as {@link NativeIOException} or one of its subclasses, chosen by errno.
 * Paths are passed to the kernel as (modified) UTF-8. A null where a path is required throws
 * {@link NullPointerException}.
 *
 * <p>The constants are the Linux x86-64 ABI values; libblocknode checks them against the C
 * headers when it loads and refuses to load if one differs.
 */
public final class LinuxNative {

    static {
        NativeLibrary.load();
    }

    private LinuxNative() {
        throw new AssertionError("not instantiable");
    }

    // ---- mount(2) flags (<sys/mount.h>) -------------------------------------------------------

    public static final long MS_RDONLY = 1L;
    public static final long MS_NOSUID = 1L << 1;
    public static final long MS_NODEV = 1L << 2;
    public static final long MS_NOEXEC = 1L << 3;
    public static final long MS_SYNCHRONOUS = 1L << 4;
    public static final long MS_REMOUNT = 1L << 5;
    public static final long MS_MANDLOCK = 1L << 6;
    public static final long MS_DIRSYNC = 1L << 7;
    public static final long MS_NOATIME = 1L << 10;
    public static final long MS_NODIRATIME = 1L << 11;
    public static final long MS_BIND = 1L << 12;
    public static final long MS_MOVE = 1L << 13;
    public static final long MS_REC = 1L << 14;
    public static final long MS_SILENT = 1L << 15;
    public static final long MS_UNBINDABLE = 1L << 17;
    public static final long MS_PRIVATE = 1L << 18;
    public static final long MS_SLAVE = 1L << 19;
    public static final long MS_SHARED = 1L << 20;
    public static final long MS_RELATIME = 1L << 21;
    public static final long MS_STRICTATIME = 1L << 24;
    public static final long MS_LAZYTIME = 1L << 25;

    // ---- umount2(2) flags ----------------------------------------------------------------------

    public static final int MNT_FORCE = 1;
    public static final int MNT_DETACH = 2;
    public static final int MNT_EXPIRE = 4;
    public static final int UMOUNT_NOFOLLOW = 8;

    // ---- indexes into the array returned by stat(String) ---------------------------------------

    public static final int STAT_DEV_MAJOR = 0;
    public static final int STAT_DEV_MINOR = 1;
    public static final int STAT_RDEV_MAJOR = 2;
    public static final int STAT_RDEV_MINOR = 3;
    /** st_mode: file type and permission bits. */
    public static final int STAT_MODE = 4;
    /** 1 if the path is the root of a mount, 0 if not, -1 if the kernel does not say. */
    public static final int STAT_MOUNT_ROOT = 5;
    public static final int STAT_LENGTH = 6;

    /** st_mode file type bits, for use with {@link #STAT_MODE}. */
    public static final long S_IFMT = 0170000L;
    public static final long S_IFDIR = 0040000L;
    public static final long S_IFCHR = 0020000L;
    public static final long S_IFBLK = 0060000L;
    public static final long S_IFREG = 0100000L;
    public static final long S_IFLNK = 0120000L;

    // ---- indexes into the array returned by statvfs(String) ------------------------------------

    public static final int STATVFS_BSIZE = 0;
    public static final int STATVFS_FRSIZE = 1;
    public static final int STATVFS_BLOCKS = 2;
    public static final int STATVFS_BFREE = 3;
    public static final int STATVFS_BAVAIL = 4;
    public static final int STATVFS_FILES = 5;
    public static final int STATVFS_FFREE = 6;
    public static final int STATVFS_FAVAIL = 7;
    public static final int STATVFS_FLAG = 8;
    public static final int STATVFS_LENGTH = 9;

    /** f_flag bit: the file system is mounted read-only. */
    public static final long ST_RDONLY = 1L;

    // ---- mounts ---------------------------------------------------------------------------------

    /**
     * mount(2), unchanged. Why: NodeStage/NodePublish mount file systems and bind mounts, and the
     * JDK cannot. {@code source}, {@code fsType} and {@code data} may be null (e.g. for
     * {@link #MS_REMOUNT} or propagation changes). The exception's path is {@code "source -> target"}.
     */
    public static native void mount(String source, String target, String fsType, long flags, String data)
            throws NativeIOException;

    /** umount2(2). Why: NodeUnstage/NodeUnpublish unmount, optionally lazily ({@link #MNT_DETACH}). */
    public static native void umount2(String target, int flags) throws NativeIOException;

    /**
     * Whether {@code path} itself (the final symlink not followed) is the root of a mount, in O(1):
     * statx's STATX_ATTR_MOUNT_ROOT where the kernel reports it, else st_dev compared with the
     * parent's (and inode equality for "/"). Why: the CSI calls must be idempotent, and scanning
     * /proc/self/mountinfo per call is slow on nodes with thousands of mounts. Also true for a
     * device node bind-mounted onto a file (raw block volumes).
     */
    public static native boolean isMountPoint(String path) throws NativeIOException;

    /**
     * statx(2) without following the final symlink, as {@code long[STAT_LENGTH]}: see the STAT_*
     * indexes. Why: the JDK exposes neither major:minor of st_dev/st_rdev nor the mount-root
     * attribute, which the plugin needs to match a published block device to its source.
     */
    public static native long[] stat(String path) throws NativeIOException;

    /**
     * {@link #stat} of {@code relative} as the kernel resolves it beneath the directory {@code root}
     * (openat2 with RESOLVE_BENEATH: a ".." or symlink that would leave {@code root}, or an absolute
     * symlink, fails with EXDEV); the final element is not followed. Why: proving that a path stays
     * under the kubelet root otherwise takes a realpath walk, one lstat per element, on every call.
     * Linux 5.6 and newer (older kernels: ENOSYS).
     */
    public static native long[] statBeneath(String root, String relative) throws NativeIOException;

    /**
     * {@link #statBeneath}, but null where that throws {@link NoSuchPathException} for the final element or
     * a directory on the way (ENOENT, ENOTDIR). Why: absence is an ordinary answer for a path kubelet has
     * not created yet, and an exception thrown from C costs a stack walk and a message on every call.
     */
    public static native long[] statBeneathIfPresent(String root, String relative) throws NativeIOException;

    /**
     * statvfs(3), as {@code long[STATVFS_LENGTH]}: see the STATVFS_* indexes. Why: NodeGetVolumeStats
     * reports bytes and inodes, and the JDK's FileStore has no inode counts.
     */
    public static native long[] statvfs(String path) throws NativeIOException;

    // ---- block devices ----------------------------------------------------------------------------

    /** Size in bytes of a block device (ioctl BLKGETSIZE64). Why: volume stats and expansion checks. */
    public static native long blockDeviceSize(String devicePath) throws NativeIOException;

    /** Logical sector size of a block device (ioctl BLKSSZGET). Why: alignment checks on raw volumes. */
    public static native int blockSectorSize(String devicePath) throws NativeIOException;

    /**
     * fsync then ioctl BLKFLSBUF: write back dirty pages, then drop the device's buffer cache.
     * Why: before a device is detached (iSCSI logout, FC removal) nothing may be left in the page
     * cache. Needs CAP_SYS_ADMIN.
     */
    public static native void flushBlockBuffers(String devicePath) throws NativeIOException;

    /**
     * True when open(O_EXCL) on the block device fails with EBUSY: a mounted filesystem, a device-mapper
     * map, an md array or swap holds it. Why: never format, mount or hand out a device something else
     * on the node is already using (a path device under a multipath map, a LUN mounted by hand).
     */
    public static native boolean isBlockDeviceClaimed(String devicePath) throws NativeIOException;

    /**
     * open(O_RDONLY) + fsync(2) + close: works on files and directories. Why: make a written file
     * and the directory entry naming it durable (staging metadata) before reporting success.
     */
    public static native void fsync(String path) throws NativeIOException;

    // ---- kernel uevents ---------------------------------------------------------------------------

    /**
     * A netlink socket (NETLINK_KOBJECT_UEVENT, close-on-exec) bound to the kernel's uevent group, with a
     * receive buffer of {@code receiveBufferBytes} when positive (forced past rmem_max where permitted).
     * Returns its file descriptor, to be given back to {@link #close(int)}. Why: waiting for a SCSI disk or
     * a multipath map to appear by the kernel's word instead of polling sysfs. Fails with
     * {@link PermissionDeniedException} or another {@link NativeIOException} where the sandbox forbids it.
     */
    public static native int openUeventSocket(int receiveBufferBytes) throws NativeIOException;

    /**
     * Waits at most {@code timeoutMillis} (poll(2)) for one datagram on a socket from
     * {@link #openUeventSocket(int)} and returns it as sent: {@code action@devpath}, a NUL, then
     * {@code KEY=VALUE} strings each ended by a NUL. Returns null when nothing arrived in time (or a signal
     * came first), and an empty array for a datagram that was dropped because the kernel did not send it
     * (sender port id not 0) or it is not shaped like a uevent. Throws with errno ENOBUFS when the socket
     * overflowed and EMSGSIZE for a message larger than the receive buffer: in both cases events were lost.
     */
    public static native byte[] receiveUevent(int fd, int timeoutMillis) throws NativeIOException;

    /** close(2) of a descriptor this class handed out. Never retried: Linux frees it even on EINTR. */
    public static native void close(int fd) throws NativeIOException;
}
