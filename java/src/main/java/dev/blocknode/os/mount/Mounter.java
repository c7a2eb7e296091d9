package dev.blocknode.os.mount;

import dev.blocknode.os.FileStat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Predicate;

/**
 * Everything blocknode does with mounts, in one small interface. The Linux implementation makes the
 * syscalls directly (no mount(8) fork: 8-9 us instead of milliseconds per bind+unbind).
 */
public interface Mounter {

    /** Mounts a filesystem of type {@code fsType} from a block device. */
    void mount(Path device, Path target, String fsType, MountOptions options) throws IOException;

    /**
     * Bind-mounts {@code source} (a directory, or a device node onto a file; not recursive) at {@code target},
     * with the per-mount-point flags of {@code options} (read-only, nosuid, nodev, noexec, atime) in one step:
     * the mount has them from the instant it appears at the target. Where the target lies in a shared mount
     * (the kubelet root, mounted Bidirectional in the plugin's container) the kernel copies the new mount to
     * every peer and slave, the host's mount namespace among them, with the flags it has when it appears; a
     * remount afterwards would change the plugin's own copy only. The flags are added to those of the
     * source's mount, never cleared. Either the bind is at the target with all its flags, or nothing is.
     */
    void bind(Path source, Path target, MountOptions options) throws IOException;

    /**
     * Unmounts {@code target}.
     *
     * @return false when nothing was mounted there (so retries of a teardown are harmless)
     */
    boolean unmount(Path target) throws IOException;

    /** O(1), never reads the mount table. */
    boolean isMountPoint(Path path) throws IOException;

    /** {@link #isMountPoint}, false when nothing is at {@code path} (a publication kubelet already removed). */
    default boolean isPresentMountPoint(Path path) throws IOException {
        return Files.exists(path, LinkOption.NOFOLLOW_LINKS) && isMountPoint(path);
    }

    FileStat stat(Path path) throws IOException;

    /**
     * The mount table's entries that {@code wanted} keeps, without holding the rest (see MountTable): reading
     * the table costs milliseconds on a busy node, so only for the few questions that need all of it.
     */
    List<MountEntry> mountsWhere(Predicate<MountEntry> wanted) throws IOException;
}
