package dev.blocknode.os.fd;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A file or directory opened once (O_PATH, its last element not followed) and used by descriptor from then
 * on. A name is looked up at most one element at a time, in a directory held open: whatever is swapped into
 * the path after it was opened, the operations here still act on what was opened, or on an entry of it.
 */
public final class OpenedPath implements AutoCloseable {

    /** How a syscall that takes only a path (mount, umount2, statvfs) is given a descriptor instead. */
    private static final Path OWN_DESCRIPTORS = Path.of("/proc/self/fd");

    private final int fd;
    private final Path shown;
    private boolean closed;

    OpenedPath(int fd, Path shown) {
        this.fd = fd;
        this.shown = shown;
    }

    /** The path this was opened as: for messages only, never to be used again to reach it. */
    public Path shown() {
        return shown;
    }

    /**
     * /proc/self/fd/N: a path the kernel resolves to exactly the opened file (a magic link), for syscalls that
     * take a path. Mounting onto it mounts onto the opened directory or file, wherever its name now points.
     */
    public Path viaDescriptor() {
        return OWN_DESCRIPTORS.resolve(Integer.toString(fd));
    }

    /**
     * /proc/self/fd/N/name: the entry {@code name} as the kernel finds it in the opened directory now. For
     * umount2 with UMOUNT_NOFOLLOW, which must look the mount up by name (a descriptor held on the mount
     * itself would keep it busy): the lookup is confined to this directory and follows no symlink.
     */
    public Path childViaDescriptor(String name) {
        return viaDescriptor().resolve(requireElement(name));
    }

    public FileStat stat() throws IOException {
        return FileStat.of(LinuxNative.statAt(fd, ""));
    }

    /** The entry {@code name} of this directory, not followed; empty when there is none. */
    public Optional<FileStat> statChild(String name) throws IOException {
        long[] stat = LinuxNative.statAt(fd, requireElement(name));
        return stat == null ? Optional.empty() : Optional.of(FileStat.of(stat));
    }

    /** Opens the entry {@code name} of this directory, not followed (a symlink comes back as the link). */
    public OpenedPath openChild(String name) throws IOException {
        return new OpenedPath(LinuxNative.openBeneath(fd, requireElement(name), 0), shown.resolve(name));
    }

    /** Opens the directory {@code name} in this one, creating it (mode 0750) when absent. */
    public OpenedPath openOrCreateDirectory(String name) throws IOException {
        return new OpenedPath(LinuxNative.openBeneath(fd, requireElement(name), LinuxNative.OPEN_CREATE_DIRECTORIES),
                shown.resolve(name));
    }

    /** Creates the empty file {@code name} here, never following a link: false when an entry was there. */
    public boolean createFile(String name) throws IOException {
        return LinuxNative.createFileAt(fd, requireElement(name));
    }

    /** Removes the entry {@code name} of this directory (an empty directory when {@code directory}). */
    public void remove(String name, boolean directory) throws IOException {
        LinuxNative.unlinkAt(fd, requireElement(name), directory);
    }

    @Override
    public void close() throws NativeIOException {
        if (!closed) {
            closed = true;
            LinuxNative.close(fd);
        }
    }

    private static String requireElement(String name) {
        if (name.isEmpty() || name.indexOf('/') >= 0 || name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("not a single path element: " + name);
        }
        return name;
    }
}
