package dev.blocknode.os.mount;

import dev.blocknode.os.Errno;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.InvalidSyscallArgumentException;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.function.Predicate;
import java.util.logging.Logger;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * {@link Mounter} through the JNI syscall wrappers.
 *
 * <p>A bind with flags is made with the new mount API (open_tree, mount_setattr, move_mount: Linux 5.12),
 * so that it is attached with its flags. Where the kernel lacks it (ENOSYS), the bind is made in a private
 * scratch mount instead ({@link #DEFAULT_SCRATCH}, a tmpfs the plugin mounts there on first need), remounted
 * with its flags there, where no other namespace sees it, and then moved onto the target with MS_MOVE: a
 * moved mount is copied to the target's peers with the flags it has then, as a new one is. If that fails
 * too, the bind fails, saying why; it is never left at the target without its flags.
 *
 * <p>What fails in a system call leaves here re-typed as os's {@link dev.blocknode.os.SyscallException}.
 */
public final class LinuxMounter implements Mounter {

    private static final Logger LOG = Logger.getLogger(LinuxMounter.class.getName());

    /**
     * Where binds are prepared on kernels without mount_setattr. Runtime state, so under /run: in the plugin's
     * container that is the container's own filesystem, which no other mount namespace receives mounts from.
     */
    static final Path DEFAULT_SCRATCH = Path.of("/run/blocknode/binds");

    /** The flags that statvfs reports in the same bits as mount(2) takes them, and that a bind inherits. */
    private static final long INHERITED_FLAGS = LinuxNative.MS_RDONLY | LinuxNative.MS_NOSUID
            | LinuxNative.MS_NODEV | LinuxNative.MS_NOEXEC;

    /**
     * umount2 answers EBUSY while anything holds a reference into the mount, however briefly: a path walk
     * or statfs by another process (monitoring agents statfs every mount), or a child process the plugin
     * is spawning for another volume, which holds a copy of every descriptor (ours are close-on-exec) from
     * its clone until its exec. Seen in `make soak` about once in 3,000 unpublishes. So an unmount tries
     * again, pausing 1, 2, 4, 8 and 16 ms, before it reports the mount busy.
     */
    static final int BUSY_ATTEMPTS = 6;

    /** Waits before the next attempt of a busy unmount; {@code attempt} counts from 1. */
    interface BusyPause {
        void before(int attempt) throws InterruptedException;
    }

    /** A bind attached with its attributes: {@link LinuxNative#bindWithAttributes}, or a test's stand-in. */
    interface AttachedBind {
        void bind(String source, String target, long attrSet, long attrClear) throws IOException;
    }

    private final HostPaths host;
    private final BusyPause busyPause;
    private final Path scratch;
    private final AttachedBind attachedBind;
    /** Set on the first ENOSYS from the new mount API; from then on every bind with flags is moved. */
    private volatile boolean moveBinds;
    /** Whether {@link #scratch} was made a private tmpfs by this instance (guarded by this). */
    private boolean scratchReady;

    public LinuxMounter(HostPaths host) {
        this(host, attempt -> Thread.sleep(1L << (attempt - 2)), DEFAULT_SCRATCH, LinuxNative::bindWithAttributes);
    }

    LinuxMounter(HostPaths host, BusyPause busyPause) {
        this(host, busyPause, DEFAULT_SCRATCH, LinuxNative::bindWithAttributes);
    }

    LinuxMounter(HostPaths host, BusyPause busyPause, Path scratch, AttachedBind attachedBind) {
        this.host = host;
        this.busyPause = busyPause;
        this.scratch = scratch;
        this.attachedBind = attachedBind;
    }

    @Override
    public void mount(Path device, Path target, String fsType, MountOptions options) throws IOException {
        retyped(() -> LinuxNative.mount(device.toString(), target.toString(), fsType, options.flags(),
                options.dataString()));
    }

    @Override
    public void bind(Path source, Path target, MountOptions options) throws IOException {
        retyped(() -> bindNatively(source, target, options));
    }

    private void bindNatively(Path source, Path target, MountOptions options) throws IOException {
        long flags = options.perMountPoint().flags();
        if (flags == 0) { // nothing to carry: the bind has the source's flags, wherever it is copied
            LinuxNative.mount(source.toString(), target.toString(), null, LinuxNative.MS_BIND, null);
            return;
        }
        if (!moveBinds) {
            MountAttributes attributes = MountAttributes.of(flags);
            try {
                attachedBind.bind(source.toString(), target.toString(), attributes.set(), attributes.clear());
                return;
            } catch (NativeIOException e) {
                if (Errno.of(e) != Errno.ENOSYS) {
                    throw e;
                }
                moveBinds = true;
                LOG.warning(() -> "this kernel has no " + e.syscall() + " (the new mount API, Linux 5.12): binds"
                        + " with flags are prepared in " + scratch + " and moved into place from now on");
            }
        }
        try {
            bindByMove(source, target, flags);
        } catch (IOException e) {
            throw new IOException("this kernel lacks the new mount API (mount_setattr, Linux 5.12) that attaches a"
                    + " bind with its flags, and the bind prepared in " + scratch + " could not be moved into place:"
                    + " " + e.getMessage(), e);
        }
    }

    /**
     * The bind made in a private scratch mount, given its flags there (a remount, which no other namespace
     * sees), then moved onto the target: the mount is attached there, and copied to the target's peers, with
     * its flags. The flags it inherited from the source's mount are kept, as mount_setattr keeps them.
     */
    private void bindByMove(Path source, Path target, long flags) throws IOException {
        Path slot = newSlot(Files.isDirectory(source)); // follows /proc/self/fd/N to what was opened
        try {
            LinuxNative.mount(source.toString(), slot.toString(), null, LinuxNative.MS_BIND, null);
            try {
                long inherited = LinuxNative.statvfs(slot.toString())[LinuxNative.STATVFS_FLAG] & INHERITED_FLAGS;
                LinuxNative.mount(null, slot.toString(), null,
                        LinuxNative.MS_REMOUNT | LinuxNative.MS_BIND | inherited | flags, null);
                LinuxNative.mount(slot.toString(), target.toString(), null, LinuxNative.MS_MOVE, null);
            } catch (IOException e) {
                try {
                    LinuxNative.umount2(slot.toString(), LinuxNative.MNT_DETACH);
                } catch (IOException left) {
                    e.addSuppressed(left);
                }
                throw e;
            }
        } finally {
            Files.deleteIfExists(slot);
        }
    }

    /** A new, empty directory or file in the scratch mount, made a private tmpfs first if it is not yet. */
    private synchronized Path newSlot(boolean directory) throws IOException {
        if (!scratchReady) {
            prepareScratch();
            scratchReady = true;
        }
        return directory ? Files.createTempDirectory(scratch, "bind-") : Files.createTempFile(scratch, "bind-", "");
    }

    /**
     * Mounts a tmpfs at the scratch directory unless one is there (an earlier run in this mount namespace), then
     * makes it private: what is mounted in it is copied nowhere. Takes away what an earlier run left in it (a
     * bind it died before moving). Where the scratch's parent mount is shared (not in the plugin's container),
     * the new tmpfs itself is copied to the peers once, empty, before it is made private.
     */
    private void prepareScratch() throws IOException {
        Files.createDirectories(scratch,
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        if (!LinuxNative.isMountPoint(scratch.toString())) {
            LinuxNative.mount("blocknode-binds", scratch.toString(), "tmpfs",
                    LinuxNative.MS_NOSUID | LinuxNative.MS_NODEV | LinuxNative.MS_NOEXEC, "mode=0700,size=1m");
        }
        LinuxNative.mount(null, scratch.toString(), null, LinuxNative.MS_PRIVATE, null);
        try (DirectoryStream<Path> left = Files.newDirectoryStream(scratch)) {
            for (Path slot : left) {
                for (int stacked = 0; stacked < 8 && LinuxNative.isMountPoint(slot.toString()); stacked++) {
                    LinuxNative.umount2(slot.toString(), LinuxNative.MNT_DETACH | LinuxNative.UMOUNT_NOFOLLOW);
                }
                Files.deleteIfExists(slot);
            }
        }
    }

    @Override
    public boolean unmount(Path target) throws IOException {
        return retyped(() -> unmountNatively(target));
    }

    private boolean unmountNatively(Path target) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                retyped(() -> LinuxNative.umount2(target.toString(), LinuxNative.UMOUNT_NOFOLLOW));
                return true;
            } catch (InvalidSyscallArgumentException notMounted) {
                // EINVAL: target is not a mount point. Check, so that a real EINVAL is not swallowed.
                if (isMountPoint(target)) {
                    throw notMounted;
                }
                return false;
            } catch (SyscallException busy) {
                if (busy.errno() != Errno.EBUSY || attempt == BUSY_ATTEMPTS) {
                    throw busy; // names umount2, the path and EBUSY; the caller says whose mount it is
                }
                try {
                    busyPause.before(attempt + 1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while " + target + " was busy");
                }
            }
        }
    }

    @Override
    public boolean isMountPoint(Path path) throws IOException {
        return retyped(() -> LinuxNative.isMountPoint(path.toString()));
    }

    @Override
    public FileStat stat(Path path) throws IOException {
        return retyped(() -> FileStat.of(LinuxNative.stat(path.toString())));
    }

    @Override
    public List<MountEntry> mountsWhere(Predicate<MountEntry> wanted) throws IOException {
        return MountTable.read(host.mountInfo(), wanted);
    }
}
