package dev.blocknode.os.natives;

/**
 * Every native method of blocknode, and nothing else: thin wrappers over Linux system calls that
 * the JDK does not offer. The implementations live in libblocknode.so (src/main/c), which binds
 * them with RegisterNatives when {@link NativeLibrary} loads it; this class loads it on first use.
 *
 * <p>Failures are thrown as {@link NativeIOException}, carrying the raw errno; the os layer tells errnos apart.
 * Paths are passed to the kernel as (modified) UTF-8. A null where a path is required throws
 * {@link NullPointerException}.
 *
 * <p>The constants are the Linux x86-64 ABI values; libblocknode checks them against the C
 * headers when it loads and refuses to load if one differs.
 */
public final class LinuxNative {

    static {
        NativeLibrary.loadForLinuxNative();
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

    // ---- mount_setattr(2) attributes (<sys/mount.h>, struct mount_attr) ------------------------

    public static final long MOUNT_ATTR_RDONLY = 0x1L;
    public static final long MOUNT_ATTR_NOSUID = 0x2L;
    public static final long MOUNT_ATTR_NODEV = 0x4L;
    public static final long MOUNT_ATTR_NOEXEC = 0x8L;
    /** The atime setting: one of RELATIME, NOATIME, STRICTATIME; to change it, clear this and set one. */
    public static final long MOUNT_ATTR__ATIME = 0x70L;
    public static final long MOUNT_ATTR_RELATIME = 0L;
    public static final long MOUNT_ATTR_NOATIME = 0x10L;
    public static final long MOUNT_ATTR_STRICTATIME = 0x20L;
    public static final long MOUNT_ATTR_NODIRATIME = 0x80L;

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
    /** The inode number: with the device, what tells that a name still names the file that was opened. */
    public static final int STAT_INODE = 6;
    public static final int STAT_LENGTH = 7;

    /** st_mode file type bits, for use with {@link #STAT_MODE}. */
    public static final long S_IFMT = 0170000L;
    public static final long S_IFDIR = 0040000L;
    public static final long S_IFCHR = 0020000L;
    public static final long S_IFBLK = 0060000L;
    public static final long S_IFREG = 0100000L;
    public static final long S_IFLNK = 0120000L;

    // ---- indexes into the array returned by statvfs(String) and fstatvfs(int) --------------------

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

    /**
     * A bind mount of {@code source} at {@code target} that has its attributes from the instant it is attached:
     * open_tree(2) with OPEN_TREE_CLONE (not recursive, like {@link #MS_BIND} alone) of {@code source}, then
     * mount_setattr(2) on the detached copy with {@code attrSet} and {@code attrClear} (MOUNT_ATTR_*; skipped
     * when both are 0), then move_mount(2) of it onto {@code target}. Both paths' final symlinks are followed,
     * as by mount(2), so {@code /proc/self/fd/N} names an opened file. On any failure nothing is mounted (the
     * detached copy dissolves when its descriptor closes). The exception names the failed syscall
     * ({@code open_tree}, {@code mount_setattr} or {@code move_mount}) and {@code "source -> target"}; ENOSYS
     * says the kernel lacks one (open_tree and move_mount: Linux 5.2; mount_setattr: 5.12). Why: a mount made
     * in a shared mount is copied to its peers (the host, for the kubelet root) with the flags it has when it is
     * attached; a remount afterwards changes only the plugin's own copy.
     */
    public static native void bindWithAttributes(String source, String target, long attrSet, long attrClear)
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
     * statvfs(3), as {@code long[STATVFS_LENGTH]}: see the STATVFS_* indexes. Why: NodeGetVolumeStats
     * reports bytes and inodes, and the JDK's FileStore has no inode counts.
     */
    public static native long[] statvfs(String path) throws NativeIOException;

    /**
     * fstatvfs(3) of a descriptor (an O_PATH one will do), laid out as {@link #statvfs}. Why: a path opened
     * beneath the kubelet root is read by its descriptor, where statvfs of /proc/self/fd/N would first walk
     * procfs back to it (2.6 us against 0.4 us here, a sizeable share of a NodeGetVolumeStats).
     */
    public static native long[] fstatvfs(int fd) throws NativeIOException;

    // ---- paths used by descriptor ----------------------------------------------------------------

    /** {@link #openBeneath} option: create every missing directory on the way, the last element included. */
    public static final int OPEN_CREATE_DIRECTORIES = 1;
    /** {@link #openBeneath} option: resolve by the component walk even where the kernel has openat2. */
    public static final int OPEN_WALK = 2;
    /** {@link #openBeneath} option: the last element must be a directory too (a symlink there: ELOOP). */
    public static final int OPEN_DIRECTORY = 4;

    /**
     * open(O_PATH | O_DIRECTORY | O_CLOEXEC) of a directory, following symlinks: the descriptor that paths
     * are then resolved beneath (the kubelet root, opened once at start). Give it back to {@link #close(int)}.
     */
    public static native int openDirectory(String path) throws NativeIOException;

    /**
     * An O_PATH, close-on-exec descriptor of {@code relative} as resolved beneath the directory {@code dirFd}:
     * openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, or, before Linux 5.6 and
     * with {@link #OPEN_WALK}, one openat(O_NOFOLLOW) per element from {@code dirFd}. Any symlink on the way
     * throws {@link UnsafePathException} (ELOOP), so do "." and ".." elements and an absolute path (EXDEV); a
     * missing element throws {@link NoSuchPathException}. The final element is opened, never followed: a
     * symlink there comes back as a descriptor of the link itself, for the caller to refuse. With
     * {@link #OPEN_CREATE_DIRECTORIES} every missing element is created (mkdirat, mode 0750, relative to its
     * parent's descriptor) and each must be a directory; with {@link #OPEN_DIRECTORY} the last element must be
     * a directory (not followed: a symlink there throws {@link UnsafePathException}). Why: a path from a request is resolved once and then
     * used only by descriptor, so a symlink swapped in later cannot redirect a mount, mkdir or unlink.
     */
    public static native int openBeneath(int dirFd, String relative, int options) throws NativeIOException;

    /**
     * statx of the one element {@code name} of the directory {@code dirFd}, not followed, as
     * {@code long[STAT_LENGTH]}; of {@code dirFd} itself for "". Null when there is no such entry (ENOENT).
     * Why: the checks before an unmount or unlink look at the entry that will be used, by descriptor.
     */
    public static native long[] statAt(int dirFd, String name) throws NativeIOException;

    /**
     * openat(O_CREAT | O_EXCL | O_NOFOLLOW) of the file {@code name} in the directory {@code dirFd}, closed at
     * once: true when it was created, false when an entry of that name (of any type) was there already.
     * Why: the file a raw block volume is bind-mounted onto, created without following anything.
     */
    public static native boolean createFileAt(int dirFd, String name) throws NativeIOException;

    /**
     * unlinkat(2) of the element {@code name} of the directory {@code dirFd} (AT_REMOVEDIR when
     * {@code directory}). Why: the plugin removes the publish targets it made, relative to a parent it opened.
     */
    public static native void unlinkAt(int dirFd, String name, boolean directory) throws NativeIOException;

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

    /**
     * open(O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) of {@code path}: a final symlink is not
     * followed ({@link UnsafePathException}, ELOOP) and the open never waits (a FIFO without a writer, a device).
     * Check what was opened with {@link #statAt}{@code (fd, "")} before reading it with {@link #read}; give it
     * back to {@link #close(int)}. Why: a file the plugin reads at start (a staging record) must not hang it, be
     * redirected by a link, or be a device that never ends; the JDK cannot open without blocking.
     */
    public static native int openForReading(String path) throws NativeIOException;

    /**
     * read(2) of at most {@code length} bytes into {@code buffer} from {@code offset}; 0 at the end of the
     * file; EINTR is retried. Why: reading a descriptor from {@link #openForReading}.
     */
    public static native int read(int fd, byte[] buffer, int offset, int length) throws NativeIOException;

    // ---- SCSI commands (SG_IO) --------------------------------------------------------------------

    /** {@link #scsiCommand} data directions: none, data out (to the device), data in (from it). */
    public static final int SCSI_NO_DATA = 0;
    public static final int SCSI_TO_DEVICE = 1;
    public static final int SCSI_FROM_DEVICE = 2;

    // Indexes into the array returned by scsiCommand:
    /** The SCSI status byte (sg_io_hdr status): 0x00 GOOD, 0x02 CHECK CONDITION, 0x18 RESERVATION CONFLICT. */
    public static final int SCSI_STATUS = 0;
    /** The transport's verdict (host_status, DID_*): 0 when the command reached the device. */
    public static final int SCSI_HOST_STATUS = 1;
    /** The midlayer's (driver_status, DRIVER_*): 0x08 DRIVER_SENSE when sense came back. */
    public static final int SCSI_DRIVER_STATUS = 2;
    /** Bytes of the data buffer not transferred. */
    public static final int SCSI_RESIDUAL = 3;
    /** How many bytes of sense data were written into the sense buffer. */
    public static final int SCSI_SENSE_LENGTH = 4;
    /** Milliseconds the command took, as the midlayer measured it. */
    public static final int SCSI_DURATION = 5;
    public static final int SCSI_LENGTH = 6;

    /**
     * open(O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC) of the block device node {@code devicePath}, for
     * {@link #scsiCommand}: ENOTBLK for anything that is not a block device, ELOOP for a symlink. Give it back
     * to {@link #close(int)}. While it is open the kernel gives the disk's name and device number to no other
     * disk, so what sysfs says of that number (read after this open: {@link #statAt} of the descriptor with
     * "" gives it) is what the commands sent through the descriptor reach. Why: an identity checked by name
     * before an open by name could be another disk's by the time of the open.
     */
    public static native int openBlockDevice(String devicePath) throws NativeIOException;

    /**
     * One SCSI command through ioctl(SG_IO) on {@code fd}, a descriptor from {@link #openBlockDevice}: the CDB
     * (6 to 16 bytes), the data buffer for {@code direction} (null or empty with {@link #SCSI_NO_DATA}; filled
     * in place for {@link #SCSI_FROM_DEVICE}), a sense buffer (up to 255 bytes) filled with what the device
     * returned, and a timeout after which the midlayer aborts the command. Returns {@code int[SCSI_LENGTH]}
     * (see the SCSI_* indexes): a command the device refused is a status, not an exception. Throws only when
     * the ioctl itself fails: ENOTTY ({@link UnsupportedIoctlException}) for a device that is not SCSI, EINVAL
     * for bad arguments, ENODEV or ENXIO for a disk deleted since the open. Why: SCSI-3 persistent reservations
     * (fencing) go to each path's I_T nexus, which only SG_IO on that path device reaches; the data-out
     * commands need CAP_SYS_RAWIO, as the device is not opened for writing.
     */
    public static native int[] scsiCommand(int fd, byte[] cdb, int direction, byte[] data, byte[] sense,
                                           int timeoutMillis) throws NativeIOException;

    // ---- NVMe commands (passthrough) ----------------------------------------------------------------

    // Indexes into the array returned by nvmeIoCommand:
    /** The completion's status field: 0 for success, else bits 7:0 the status code, 10:8 its type, 15 DNR. */
    public static final int NVME_STATUS = 0;
    /** The completion's dword 0, the command's result. */
    public static final int NVME_RESULT = 1;
    public static final int NVME_LENGTH = 2;

    /**
     * ioctl(NVME_IOCTL_ID) on {@code fd}, a descriptor from {@link #openBlockDevice}: the namespace's ID, which
     * every I/O command names. ENOTTY ({@link UnsupportedIoctlException}) for a device that is not an NVMe
     * namespace. Why: {@link #nvmeIoCommand} must address the namespace the descriptor was checked to be.
     */
    public static native int nvmeNamespaceId(int fd) throws NativeIOException;

    /**
     * One NVMe I/O command through ioctl(NVME_IOCTL_IO_CMD) on {@code fd}, a descriptor from
     * {@link #openBlockDevice}: the opcode (its bits 1:0 give the data's direction), the namespace ID, the
     * command dwords 10 to 15 ({@code int[6]}), the data buffer (null or empty for none; filled in place when
     * the opcode transfers from the controller) and a timeout after which the kernel aborts the command. Returns
     * {@code int[NVME_LENGTH]} (see the NVME_* indexes): a command the controller refused is a status, not an
     * exception. Throws only when the ioctl itself fails: ENOTTY for a device that is not NVMe, EINVAL for bad
     * arguments, EACCES or EPERM without CAP_SYS_ADMIN, ENODEV for a namespace gone since the open. Why: NVMe
     * reservations (fencing), whose report the block layer's IOC_PR_* ioctls cannot read before Linux 6.19.
     */
    public static native int[] nvmeIoCommand(int fd, int opcode, int nsid, int[] dwords, byte[] data,
                                             int timeoutMillis) throws NativeIOException;

    // ---- unix sockets, as a client ------------------------------------------------------------------

    /** Indexes into the array returned by {@link #peerCredentials}: SO_PEERCRED's pid, uid and gid. */
    public static final int PEER_PID = 0;
    public static final int PEER_UID = 1;
    public static final int PEER_GID = 2;

    /**
     * A non-blocking, close-on-exec AF_UNIX stream socket connected to {@code path} (at most 107 bytes), as
     * its descriptor, to be given back to {@link #close(int)}. The path is resolved like any other, so
     * {@code /proc/self/fd/N} of an O_PATH descriptor reaches exactly the socket file that was opened, whatever
     * its name is now. ECONNREFUSED: nothing listens on that file; EAGAIN: its listener's backlog is full.
     * Why: the JDK connects only by name and cannot say which process listens at the other end.
     */
    public static native int connectUnixSocket(String path) throws NativeIOException;

    /**
     * getsockopt(SO_PEERCRED) of a connected Unix socket, as {@code int[3]} (see PEER_*): for a stream
     * socket, the process that called listen(2) at the other end and its uid and gid then, as seen from
     * this pid namespace (pid 0 when that process is not visible in it). Why: to tell a listener of this
     * process from anyone else's.
     */
    public static native int[] peerCredentials(int fd) throws NativeIOException;

    /**
     * getpeername(2) of a connected Unix socket: the {@code sun_path} bytes its listener was bound with,
     * exactly as given to bind(2) (no terminating NUL; empty for an unnamed socket; an abstract name keeps
     * its leading NUL). Why: with {@link #peerCredentials} it tells one listener of this process from another.
     */
    public static native byte[] peerAddress(int fd) throws NativeIOException;

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

    // ---- growing a mounted filesystem by descriptor -------------------------------------------------

    // Indexes into the array returned by xfsGeometry:
    /** The filesystem's (data) block size in bytes. */
    public static final int XFS_GEOMETRY_BLOCK_SIZE = 0;
    /** Blocks in the data subvolume now. */
    public static final int XFS_GEOMETRY_DATA_BLOCKS = 1;
    /** The maximum share of the space inodes may take, in percent (growing passes it back unchanged). */
    public static final int XFS_GEOMETRY_IMAXPCT = 2;
    /** Blocks per allocation group. */
    public static final int XFS_GEOMETRY_AG_BLOCKS = 3;
    public static final int XFS_GEOMETRY_LENGTH = 4;

    /**
     * openat({@code pathFd}, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC): the directory an O_PATH descriptor from
     * {@link #openBeneath} stands for, opened again for reading, since ioctl(2) fails on an O_PATH descriptor
     * (EBADF). "." names that very directory: nothing is looked up by name, followed, or crossed (a mount made
     * on it since is not entered). Give it back to {@link #close(int)}. Why: the filesystem ioctls below.
     */
    public static native int reopenDirectory(int pathFd) throws NativeIOException;

    /**
     * ioctl(XFS_IOC_FSGEOMETRY_V1) on {@code fd} (a descriptor from {@link #reopenDirectory}), as
     * {@code long[XFS_GEOMETRY_LENGTH]}: see the XFS_GEOMETRY_* indexes. ENOTTY
     * ({@link UnsupportedIoctlException}) when the file is not on xfs. Why: the block size and imaxpct that
     * {@link #xfsGrowData} needs, read from the filesystem the descriptor is on, not from one found by name.
     */
    public static native long[] xfsGeometry(int fd) throws NativeIOException;

    /**
     * ioctl(XFS_IOC_FSGROWFSDATA) on {@code fd}: the data subvolume of the xfs the descriptor is on to
     * {@code newBlocks} filesystem blocks, with {@code imaxpct} (pass the geometry's to keep it). What
     * {@code xfs_growfs -d} sends, without its lookup of the mount by name. The kernel needs CAP_SYS_ADMIN
     * (EPERM), reads the new last block first (an error if the device is smaller), rounds a last allocation
     * group under 64 blocks away, and answers EAGAIN while another grow of that filesystem runs. Newer kernels
     * may shrink when {@code newBlocks} is smaller than now: never pass less than the geometry's data blocks.
     */
    public static native void xfsGrowData(int fd, long newBlocks, int imaxpct) throws NativeIOException;

    /**
     * ioctl(EXT4_IOC_RESIZE_FS) on {@code fd}: the ext4 the descriptor is on to {@code newBlocks} blocks, online.
     * What resize2fs sends for a mounted filesystem, without its lookup of the mount point by the device's name.
     * The kernel needs CAP_SYS_RESOURCE (EPERM; EPERM too for a filesystem with recorded errors), refuses to
     * shrink (EINVAL), reads the new last block first (ENOSPC if the device is smaller), and answers EBUSY
     * while another resize runs; ENOTTY when the file is not on ext4.
     */
    public static native void ext4Resize(int fd, long newBlocks) throws NativeIOException;

    // ---- device-mapper, through its control node ------------------------------------------------------

    /**
     * ioctl(DM_TARGET_MSG) on the control node {@code control} (/dev/mapper/control): sends {@code message} to
     * sector 0 of the map named {@code name}, as {@code dmsetup message NAME 0 MESSAGE} does. ENXIO
     * ({@link NoSuchDeviceException}) when there is no such map; ENOENT for a missing control node; ENOTTY or
     * EINVAL from a kernel that does not take the call. Why: a flush of a multipath map first fails its queued
     * I/O ("fail_if_no_path"), and a dmsetup process costs seconds on a loaded node.
     */
    public static native void deviceMapperMessage(String control, String name, String message)
            throws NativeIOException;

    /**
     * ioctl(DM_DEV_STATUS) of the map named {@code name}: how many times it is open now, as {@code dmsetup
     * info -o open} reports it (an opener without O_EXCL shows here and nowhere in sysfs). Errors as
     * {@link #deviceMapperMessage}.
     */
    public static native int deviceMapperOpenCount(String control, String name) throws NativeIOException;

    /**
     * ioctl(DM_DEV_REMOVE) of the map named {@code name}, never deferred: the kernel refuses an open map with
     * EBUSY ({@link DeviceBusyException}) and leaves it as it was; ENXIO when there is no such map. Errors
     * otherwise as {@link #deviceMapperMessage}. Why: what {@code multipath -f} does last, without its process.
     */
    public static native void deviceMapperRemove(String control, String name) throws NativeIOException;

    /** close(2) of a descriptor this class handed out. Never retried: Linux frees it even on EINTR. */
    public static native void close(int fd) throws NativeIOException;

    // ---- what the kernel has ----------------------------------------------------------------------

    /**
     * Whether the kernel has openat2(2) (Linux 5.6), asked of the kernel by a call it refuses (EINVAL) without
     * opening anything; false where it answers ENOSYS (an older kernel, or a seccomp filter). Why: {@code blocknode
     * doctor} says whether paths beneath the kubelet root are resolved by openat2 or by the slower component walk.
     */
    public static native boolean kernelHasOpenat2();

    /**
     * Whether the kernel has mount_setattr(2) (the new mount API, Linux 5.12), asked the same way, changing
     * nothing. Why: {@code blocknode doctor} says whether binds with flags are attached with their flags or
     * prepared in a scratch mount and moved.
     */
    public static native boolean kernelHasMountSetattr();
}
