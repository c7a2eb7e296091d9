package dev.blocknode.volume;

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

    private static String shorten(String raw) {
        String shown = raw.length() > 256 ? raw.substring(0, 256) + "..." : raw;
        return shown.replaceAll("\\p{Cntrl}", "?");
    }
}
