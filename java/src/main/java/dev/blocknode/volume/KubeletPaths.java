package dev.blocknode.volume;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Confines every path a request names to the kubelet root. A path is accepted only when it is absolute,
 * has no "." or ".." element, lies under the root, its existing ancestors resolve (through any symlink)
 * to a place under the root, and its last element is not a symlink. So no request can make the plugin
 * mount, create or delete anything elsewhere on the node.
 */
public final class KubeletPaths {

    private final Path root;
    private final Path realRoot;

    public KubeletPaths(Path root) throws IOException {
        this.root = root.toAbsolutePath().normalize();
        Files.createDirectories(this.root);
        this.realRoot = this.root.toRealPath();
    }

    public Path root() {
        return root;
    }

    /**
     * @param field the request field, named in the error
     * @throws VolumeException INVALID_ARGUMENT naming the field and why the path is refused
     */
    public Path confine(String field, String raw) throws VolumeException {
        if (raw.indexOf('\0') >= 0) {
            throw VolumeException.invalid(field + " contains a NUL byte");
        }
        if (raw.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 4096) {
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
        for (Path element : path) {
            String name = element.toString();
            if (name.equals("..") || name.equals(".")) {
                throw VolumeException.invalid(field + " must not contain \".\" or \"..\" elements: " + shorten(raw));
            }
        }
        Path normalized = path.normalize();
        if (!(normalized.startsWith(root) || normalized.startsWith(realRoot)) || normalized.equals(root)
                || normalized.equals(realRoot)) {
            throw VolumeException.invalid(field + " " + shorten(raw) + " is outside the kubelet root " + root);
        }
        if (resolvesBeneathRoot(normalized)) {
            return normalized;
        }
        Path existing = normalized.getParent();
        while (existing != null && !Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) {
            existing = existing.getParent();
        }
        try {
            if (existing == null || !existing.toRealPath().startsWith(realRoot)) {
                throw VolumeException.invalid(field + " " + shorten(raw)
                        + " resolves through a symlink to a place outside the kubelet root " + root);
            }
        } catch (IOException e) {
            throw VolumeException.invalid(field + " " + shorten(raw) + " cannot be resolved: " + e.getMessage());
        }
        if (Files.isSymbolicLink(normalized)) {
            throw VolumeException.invalid(field + " " + shorten(raw) + " is a symlink; refusing to follow it");
        }
        return normalized;
    }

    /**
     * The quick way to the walk's verdict, for the usual path: the kernel resolves it beneath the real root
     * in one call (openat2 RESOLVE_BENEATH, which fails on any ".." or symlink that would leave the root),
     * where the walk below costs an lstat per element. True only when the kernel resolved the path (or, for
     * a path whose last element does not exist yet, its parent) beneath the root and the last element is
     * not a symlink: then the walk would accept it as well. Anything else (an absolute symlink, which
     * RESOLVE_BENEATH refuses even when it points inside; a missing parent; a kernel without openat2) is
     * left to the walk, which decides and says why.
     */
    private boolean resolvesBeneathRoot(Path normalized) {
        Path relative = normalized.startsWith(realRoot) ? realRoot.relativize(normalized) : root.relativize(normalized);
        try {
            long[] stat = LinuxNative.statBeneathIfPresent(realRoot.toString(), relative.toString());
            if (stat != null) {
                return (stat[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT) != LinuxNative.S_IFLNK;
            }
            // Absent with its parent there: the last element is no entry at all, not even a dangling symlink
            // (O_PATH | O_NOFOLLOW would have opened one). Absent is usual: a publish's target, for one.
            Path parent = relative.getParent();
            return parent == null || isDirectoryBeneathRoot(parent.toString());
        } catch (NativeIOException | LinkageError slowPathDecides) {
            return false;
        }
    }

    private boolean isDirectoryBeneathRoot(String relative) throws NativeIOException {
        long[] stat = LinuxNative.statBeneathIfPresent(realRoot.toString(), relative);
        return stat != null && (stat[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT) == LinuxNative.S_IFDIR;
    }

    private static String shorten(String raw) {
        String shown = raw.length() > 256 ? raw.substring(0, 256) + "..." : raw;
        return shown.replaceAll("\\p{Cntrl}", "?");
    }
}
