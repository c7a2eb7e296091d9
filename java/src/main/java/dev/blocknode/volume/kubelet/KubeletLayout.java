package dev.blocknode.volume.kubelet;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * One path kubelet makes, relative to its root: its elements, {@link #ANY} where kubelet puts a name of its own
 * (a pod's UID, a PV's name), and which of those names a reader wants.
 */
record KubeletLayout(List<String> elements, int nameIndex) {

    static final String ANY = "*";

    KubeletLayout {
        elements = List.copyOf(elements);
    }

    /** The wanted name in {@code relative}, when it has this layout. */
    Optional<String> nameIn(Path relative) {
        if (relative.getNameCount() != elements.size()) {
            return Optional.empty();
        }
        for (int i = 0; i < elements.size(); i++) {
            String wanted = elements.get(i);
            if (!wanted.equals(ANY) && !wanted.equals(relative.getName(i).toString())) {
                return Optional.empty();
            }
        }
        return Optional.of(relative.getName(nameIndex).toString());
    }

    /** {@code path} relative to {@code root}, both normalised; empty for a path outside the root, or the root. */
    static Optional<Path> relative(Path root, Path path) {
        Path normalRoot = root.toAbsolutePath().normalize();
        Path normalPath = path.toAbsolutePath().normalize();
        if (!normalPath.startsWith(normalRoot) || normalPath.equals(normalRoot)) {
            return Optional.empty();
        }
        return Optional.of(normalRoot.relativize(normalPath));
    }
}
