package dev.blocknode.os.fd;

import dev.blocknode.os.NoSuchPathException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A directory that paths are opened beneath and never outside of (the kubelet root): every element of a
 * relative path is resolved from the directory with no symlink followed and no way out. A symlink anywhere
 * on the way is refused with {@link dev.blocknode.os.UnsafePathException}, a missing element (or a
 * file where a directory must be) with {@link dev.blocknode.os.NoSuchPathException}. The host's is
 * {@link #REAL}; a test can supply an in-memory tree through {@link dev.blocknode.os.host.Host#files()}.
 */
public interface ConfinedDirectory {

    /** How paths are resolved: by openat2 where the kernel has it, or always by the component walk. */
    enum Resolution { OPENAT2, WALK }

    /** Where directories to open beneath come from: the host's descriptors, or a test's tree. */
    @FunctionalInterface
    interface Opener {
        ConfinedDirectory beneath(Path directory, Resolution resolution);
    }

    /** The host's: openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or one openat(O_NOFOLLOW) per element. */
    Opener REAL = DescriptorDirectory::new;

    Path path();

    /** Opens {@code relative} beneath the directory; its last element is not followed. */
    OpenedPath open(Path relative) throws IOException;

    /** {@link #open}, empty when an element of the path does not exist. */
    default Optional<OpenedPath> openIfPresent(Path relative) throws IOException {
        try {
            return Optional.of(open(relative));
        } catch (NoSuchPathException absent) {
            return Optional.empty();
        }
    }

    /** Opens the directory {@code relative}; empty when an element of the path does not exist. */
    Optional<OpenedPath> openDirectoryIfPresent(Path relative) throws IOException;

    /** Opens the directory {@code relative}, creating every missing directory on the way (mode 0750). */
    OpenedPath openCreatingDirectories(Path relative) throws IOException;
}
