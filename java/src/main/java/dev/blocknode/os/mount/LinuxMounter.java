package dev.blocknode.os.mount;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.natives.DeviceBusyException;
import dev.blocknode.os.natives.InvalidSyscallArgumentException;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.util.List;

/** {@link Mounter} through the JNI syscall wrappers. */
public final class LinuxMounter implements Mounter {

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

    private final HostPaths host;
    private final BusyPause busyPause;

    public LinuxMounter(HostPaths host) {
        this(host, attempt -> Thread.sleep(1L << (attempt - 2)));
    }

    LinuxMounter(HostPaths host, BusyPause busyPause) {
        this.host = host;
        this.busyPause = busyPause;
    }

    @Override
    public void mount(Path device, Path target, String fsType, MountOptions options) throws IOException {
        LinuxNative.mount(device.toString(), target.toString(), fsType, options.flags(), options.dataString());
    }

    @Override
    public void bind(Path source, Path target, MountOptions options) throws IOException {
        LinuxNative.mount(source.toString(), target.toString(), null, LinuxNative.MS_BIND, null);
        long flags = options.perMountPoint().flags();
        if (flags == 0) {
            return;
        }
        try {
            // A bind mount ignores flags given with it: they only take effect through a remount of the bind.
            LinuxNative.mount(null, target.toString(), null,
                    LinuxNative.MS_REMOUNT | LinuxNative.MS_BIND | flags, null);
        } catch (NativeIOException e) {
            // Never leave a bind that is writable when read-only was asked for.
            unmount(target);
            throw e;
        }
    }

    @Override
    public boolean unmount(Path target) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                LinuxNative.umount2(target.toString(), LinuxNative.UMOUNT_NOFOLLOW);
                return true;
            } catch (InvalidSyscallArgumentException notMounted) {
                // EINVAL: target is not a mount point. Check, so that a real EINVAL is not swallowed.
                if (isMountPoint(target)) {
                    throw notMounted;
                }
                return false;
            } catch (DeviceBusyException busy) {
                if (attempt == BUSY_ATTEMPTS) {
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
        return LinuxNative.isMountPoint(path.toString());
    }

    @Override
    public FileStat stat(Path path) throws IOException {
        long[] s = LinuxNative.stat(path.toString());
        FileStat.MountRoot root = switch ((int) s[LinuxNative.STAT_MOUNT_ROOT]) {
            case 1 -> FileStat.MountRoot.YES;
            case 0 -> FileStat.MountRoot.NO;
            default -> FileStat.MountRoot.UNKNOWN;
        };
        return new FileStat(
                new DeviceNumber(s[LinuxNative.STAT_DEV_MAJOR], s[LinuxNative.STAT_DEV_MINOR]),
                new DeviceNumber(s[LinuxNative.STAT_RDEV_MAJOR], s[LinuxNative.STAT_RDEV_MINOR]),
                (int) s[LinuxNative.STAT_MODE], root);
    }

    @Override
    public List<MountEntry> table() throws IOException {
        return MountTable.read(host.mountInfo());
    }
}
