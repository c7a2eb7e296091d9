package dev.blocknode.os.mount;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.natives.DeviceBusyException;
import dev.blocknode.os.natives.InvalidSyscallArgumentException;
import dev.blocknode.os.natives.LinuxNative;

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
    public void bind(Path source, Path target) throws IOException {
        LinuxNative.mount(source.toString(), target.toString(), null, LinuxNative.MS_BIND, null);
    }

    @Override
    public void restrictBind(Path mountRoot, MountOptions options) throws IOException {
        long flags = options.perMountPoint().flags();
        if (flags != 0) {
            LinuxNative.mount(null, mountRoot.toString(), null, LinuxNative.MS_REMOUNT | LinuxNative.MS_BIND | flags,
                    null);
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
        return FileStat.of(LinuxNative.stat(path.toString()));
    }

    @Override
    public List<MountEntry> table() throws IOException {
        return MountTable.read(host.mountInfo());
    }
}
