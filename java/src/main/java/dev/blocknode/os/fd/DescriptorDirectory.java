package dev.blocknode.os.fd;

import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * The host's {@link ConfinedDirectory}: every element of a relative path is resolved by the kernel from the
 * directory's descriptor with no symlink followed and no way out (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, or one openat(O_NOFOLLOW) per element where the kernel has no openat2), atomically:
 * there is no check to race with.
 *
 * <p>The directory itself is opened by name on every call, not once at start: it is the plugin's own
 * configuration, out of a caller's reach, and a root that is mounted over after start (a kubelet directory
 * on a disk mounted late) is then seen as it is now.
 */
final class DescriptorDirectory implements ConfinedDirectory {

    private final Path directory;
    private final int walkOption;

    DescriptorDirectory(Path directory, Resolution resolution) {
        this.directory = directory;
        this.walkOption = resolution == Resolution.WALK ? LinuxNative.OPEN_WALK : 0;
    }

    @Override
    public Path path() {
        return directory;
    }

    @Override
    public OpenedPath open(Path relative) throws IOException {
        return open(relative, walkOption);
    }

    @Override
    public Optional<OpenedPath> openDirectoryIfPresent(Path relative) throws IOException {
        try {
            return Optional.of(open(relative, walkOption | LinuxNative.OPEN_DIRECTORY));
        } catch (NoSuchPathException absent) {
            return Optional.empty();
        }
    }

    @Override
    public OpenedPath openCreatingDirectories(Path relative) throws IOException {
        return open(relative, walkOption | LinuxNative.OPEN_CREATE_DIRECTORIES);
    }

    private OpenedPath open(Path relative, int options) throws IOException {
        return retyped(() -> openNatively(relative, options));
    }

    private OpenedPath openNatively(Path relative, int options) throws IOException {
        if (relative.isAbsolute()) {
            throw new IllegalArgumentException("not a relative path: " + relative);
        }
        if (relative.toString().isEmpty()) {
            return new DescriptorPath(LinuxNative.openDirectory(directory.toString()), directory); // the directory itself
        }
        int root = LinuxNative.openDirectory(directory.toString());
        try {
            return new DescriptorPath(LinuxNative.openBeneath(root, relative.toString(), options),
                    directory.resolve(relative));
        } finally {
            closeQuietly(root);
        }
    }

    private static void closeQuietly(int fd) {
        try {
            LinuxNative.close(fd);
        } catch (NativeIOException ignored) {
            // close(2) frees the descriptor even when it reports an error; nothing is left to release
        }
    }
}
