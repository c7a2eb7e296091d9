package dev.blocknode.volume;

import dev.blocknode.os.Errno;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.UnsafePathException;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.kubelet.KubeletPaths;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A publication's target path as publish makes it and unpublish removes it: by name in its opened directory,
 * never through a link; a directory for a filesystem, a file for a raw block device.
 */
final class TargetPaths {

    private TargetPaths() {
    }

    /** The directory a filesystem is bound onto, created if absent. */
    static OpenedPath openDirectory(OpenedPath parent, String name, Path target)
            throws VolumeException, IOException {
        try {
            return parent.openOrCreateDirectory(name);
        } catch (UnsafePathException symlink) {
            throw KubeletPaths.symlinkRefused("target_path", target);
        } catch (NoSuchPathException notADirectory) {
            throw VolumeException.precondition("target path " + target + " exists and is not a directory");
        }
    }

    /** The file a device is bound onto: created here, never through a link; an empty directory is replaced. */
    static OpenedPath openFile(OpenedPath parent, String name, Path target)
            throws VolumeException, IOException {
        Optional<FileStat> existing = parent.statChild(name);
        if (existing.isPresent() && existing.get().isDirectory()) {
            try {
                parent.remove(name, true); // an empty directory left by an older kubelet: the device needs a file
            } catch (SyscallException e) {
                if (e.errno() != Errno.ENOTEMPTY) {
                    throw e;
                }
                throw VolumeException.precondition("target path " + target + " is a non-empty directory; a block "
                        + "volume needs a file there");
            }
        }
        parent.createFile(name); // false on a retry: the file is ours, checked below like any other
        OpenedPath file = parent.openChild(name);
        FileStat stat = file.stat();
        if (stat.isRegularFile()) {
            return file;
        }
        file.close();
        if (stat.isSymlink()) {
            throw KubeletPaths.symlinkRefused("target_path", target);
        }
        throw VolumeException.precondition("target path " + target + " exists and is not a file");
    }

    /**
     * The spec makes the plugin delete what it created at the target; a directory with data is never deleted.
     * Removed relative to its opened directory: nothing outside it can be reached this way.
     */
    static void delete(String volumeId, OpenedPath directory, String name, Path target, FileStat stat)
            throws VolumeException {
        if (stat.isSymlink()) {
            throw KubeletPaths.symlinkRefused("target_path", target);
        }
        try {
            directory.remove(name, stat.isDirectory());
        } catch (SyscallException e) {
            // rmdir(2) may say EEXIST for a directory with entries, as ENOTEMPTY does.
            if (e.errno() == Errno.ENOTEMPTY || e.errno() == Errno.EEXIST) {
                throw VolumeException.precondition("target path " + target + " of volume " + volumeId
                        + " is not empty after unmounting; refusing to delete what is in it");
            }
            if (e.errno() == Errno.EISDIR || e.errno() == Errno.ENOTDIR) {
                throw VolumeException.precondition("target path " + target + " of volume " + volumeId
                        + " was replaced while it was being removed (something else writes there); left it");
            }
            if (!(e instanceof NoSuchPathException)) {
                throw VolumeException.internal("cannot remove target path " + target, e);
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot remove target path " + target, e);
        }
    }
}
