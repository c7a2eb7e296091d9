package dev.blocknode.volume.kubelet;

import dev.blocknode.logging.Printable;
import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.os.UnsafePathException;
import dev.blocknode.os.fd.ConfinedDirectory;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.outcome.VolumeException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Confines every path a request names to the kubelet root. {@link #confine} checks the string (absolute, no
 * "." or ".." element, under the root); the path is then reached only through the open methods here, which
 * resolve it once beneath a descriptor of the root, following no symlink (the kernel refuses any, and any
 * way out, atomically), and hand back a descriptor that every later step uses. A path is never looked up by
 * name again, so a symlink swapped into it after the check cannot make the plugin mount, create, unmount or
 * delete anything elsewhere on the node. Symlinks below the root are refused even when they point inside:
 * kubelet makes none there, and following one is exactly what a swap exploits.
 */
public final class KubeletPaths {

    /** Linux's PATH_MAX, in bytes. */
    private static final int PATH_MAX = 4096;

    private final Path root;
    private final Path realRoot;
    private final ConfinedDirectory directory;

    public KubeletPaths(Path root) throws IOException {
        this(root, ConfinedDirectory.Resolution.OPENAT2);
    }

    /** With {@code resolution} WALK, the component walk that kernels before 5.6 get (for its tests). */
    public KubeletPaths(Path root, ConfinedDirectory.Resolution resolution) throws IOException {
        this(root, resolution, ConfinedDirectory.REAL);
    }

    /** Paths opened through {@code files}: the host's descriptors, or a unit test's in-memory tree. */
    public KubeletPaths(Path root, ConfinedDirectory.Resolution resolution, ConfinedDirectory.Opener files)
            throws IOException {
        this.root = root.toAbsolutePath().normalize();
        Files.createDirectories(this.root);
        this.realRoot = this.root.toRealPath();
        this.directory = files.beneath(realRoot, resolution);
    }

    public Path root() {
        return root;
    }

    /**
     * @param field the request field, named in the error
     * @return the path, normalized; reach it only through the open methods
     * @throws VolumeException INVALID_ARGUMENT naming the field and why the path is refused
     */
    public Path confine(String field, String raw) throws VolumeException {
        if (raw.indexOf('\0') >= 0) {
            throw VolumeException.invalid(field + " contains a NUL byte");
        }
        if (raw.length() > PATH_MAX / 3 && raw.getBytes(StandardCharsets.UTF_8).length > PATH_MAX) {
            throw VolumeException.invalid(field + " is longer than PATH_MAX (4096 bytes)");
        }
        Path path;
        try {
            path = Path.of(raw);
        } catch (RuntimeException e) {
            throw VolumeException.invalid(field + " is not a valid path: " + e.getMessage());
        }
        if (!path.isAbsolute()) {
            throw VolumeException.invalid(field + " must be an absolute path, got \"" + shorten(raw) + "\"");
        }
        if (hasDotElement(raw)) {
            throw VolumeException.invalid(field + " must not contain \".\" or \"..\" elements: " + shorten(raw));
        }
        Path normalized = path.normalize();
        if (!(normalized.startsWith(root) || normalized.startsWith(realRoot)) || normalized.equals(root)
                || normalized.equals(realRoot)) {
            throw VolumeException.invalid(field + " " + shorten(raw) + " is outside the kubelet root " + root);
        }
        return normalized;
    }

    /** Opens a confined path, its last element not followed (check its type); empty when it is not there. */
    public Optional<OpenedPath> openIfPresent(String field, Path confined) throws VolumeException {
        try {
            return directory.openIfPresent(relative(confined));
        } catch (IOException e) {
            throw refused(field, confined, e);
        }
    }

    /** Opens the directory holding a confined path; empty when it (or a directory above it) is not there. */
    public Optional<OpenedPath> openParentIfPresent(String field, Path confined) throws VolumeException {
        try {
            return directory.openDirectoryIfPresent(relativeParent(confined));
        } catch (IOException e) {
            throw refused(field, confined, e);
        }
    }

    /** Opens the directory holding a confined path, creating it and every missing directory above it. */
    public OpenedPath openParentCreating(String field, Path confined) throws VolumeException {
        return openCreating(field, confined, relativeParent(confined));
    }

    /** Opens a confined path as a directory, creating it and every missing directory above it. */
    public OpenedPath openDirectoryCreating(String field, Path confined) throws VolumeException {
        return openCreating(field, confined, relative(confined));
    }

    private OpenedPath openCreating(String field, Path confined, Path relative) throws VolumeException {
        try {
            return directory.openCreatingDirectories(relative);
        } catch (NoSuchPathException notADirectory) {
            throw VolumeException.invalid(field + " " + confined + " has a file where a directory must be");
        } catch (IOException e) {
            throw refused(field, confined, e);
        }
    }

    /** The refusal for a symlink met at the last element of an opened path, which open does not follow. */
    public static VolumeException symlinkRefused(String field, Path confined) {
        return VolumeException.invalid(field + " " + confined + " is a symlink; blocknode follows no symlink"
                + " below the kubelet root");
    }

    private static VolumeException refused(String field, Path confined, IOException e) {
        if (e instanceof UnsafePathException) {
            return VolumeException.invalid(field + " " + confined + " leads through a symlink; blocknode follows no"
                    + " symlink below the kubelet root");
        }
        return VolumeException.internal("cannot open " + field + " " + confined, e);
    }

    /**
     * A confined path relative to the root (as {@link #confine} returned it, under the root or its real path):
     * its names past the root's, which is what relativize gives for a normalized path under it, without
     * relativize's search for "." and ".." elements (a Path object per element, on every call).
     */
    Path relative(Path confined) {
        Path base = confined.startsWith(realRoot) ? realRoot : root;
        return confined.subpath(base.getNameCount(), confined.getNameCount());
    }

    /** Whether a "." or ".." element is among the names of {@code raw} (empty names, as in "a//b", are none). */
    private static boolean hasDotElement(String raw) {
        int start = 0;
        while (start <= raw.length()) {
            int end = raw.indexOf('/', start);
            if (end < 0) {
                end = raw.length();
            }
            int length = end - start;
            if ((length == 1 || length == 2) && raw.charAt(start) == '.' && (length == 1 || raw.charAt(start + 1) == '.')) {
                return true;
            }
            start = end + 1;
        }
        return false;
    }

    /** The directory holding a confined path, relative to the root: empty for one directly in the root. */
    private Path relativeParent(Path confined) {
        Path parent = relative(confined).getParent();
        return parent == null ? Path.of("") : parent;
    }

    private static String shorten(String raw) {
        return Printable.bounded(raw, 256);
    }
}
