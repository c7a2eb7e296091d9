package dev.blocknode.os.fd;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.FilesystemUsage;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A file or directory opened once (its last element not followed) and used by descriptor from then on. A
 * name is looked up at most one element at a time, in a directory held open: whatever is swapped into the
 * path after it was opened, the operations here still act on what was opened, or on an entry of it. The
 * host's is a real descriptor; an interface so that the lifecycle's unit tests can open an in-memory tree.
 */
public interface OpenedPath extends AutoCloseable {

    /** The path this was opened as: for messages only, never to be used again to reach it. */
    Path shown();

    /**
     * /proc/self/fd/N: a path the kernel resolves to exactly the opened file (a magic link), for syscalls that
     * take a path. Mounting onto it mounts onto the opened directory or file, wherever its name now points.
     */
    Path viaDescriptor();

    /**
     * /proc/self/fd/N/name: the entry {@code name} as the kernel finds it in the opened directory now. For
     * umount2 with UMOUNT_NOFOLLOW, which must look the mount up by name (a descriptor held on the mount
     * itself would keep it busy): the lookup is confined to this directory and follows no symlink.
     */
    Path childViaDescriptor(String name);

    FileStat stat() throws IOException;

    /** What statvfs says of the filesystem holding the opened file, asked by descriptor. */
    FilesystemUsage usage() throws IOException;

    /** The entry {@code name} of this directory, not followed; empty when there is none. */
    Optional<FileStat> statChild(String name) throws IOException;

    /**
     * This directory opened again for reading (O_RDONLY | O_DIRECTORY, by "." in it: the same inode, nothing
     * looked up by name), for the filesystem ioctls an O_PATH descriptor does not take. Close it.
     */
    OpenedFilesystem reopenForIoctl() throws IOException;

    /** Opens the entry {@code name} of this directory, not followed (a symlink comes back as the link). */
    OpenedPath openChild(String name) throws IOException;

    /** Opens the directory {@code name} in this one, creating it (mode 0750) when absent. */
    OpenedPath openOrCreateDirectory(String name) throws IOException;

    /** Creates the empty file {@code name} here, never following a link: false when an entry was there. */
    boolean createFile(String name) throws IOException;

    /** Removes the entry {@code name} of this directory (an empty directory when {@code directory}). */
    void remove(String name, boolean directory) throws IOException;

    @Override
    void close() throws IOException;

    /** {@code name} when it is one element of a directory: never a path, ".", ".." or empty. */
    static String requireElement(String name) {
        if (name.isEmpty() || name.indexOf('/') >= 0 || name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("not a single path element: " + name);
        }
        return name;
    }
}
