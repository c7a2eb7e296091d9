package dev.blocknode.volume.kubelet;

import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.outcome.VolumeException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Which pod a publication target belongs to, by where kubelet puts them (relative to its root; kubelet's
 * csi_mounter.go and csi_block.go), and whether that pod's directory is gone from this node:
 * <pre>
 *   filesystem  pods/POD_UID/volumes/kubernetes.io~csi/PV_NAME/mount
 *   raw block   plugins/kubernetes.io/csi/volumeDevices/publish/PV_NAME/POD_UID
 * </pre>
 * Kubelet creates pods/POD_UID when it admits a pod and removes it only once the pod is gone; a pod UID is
 * never given to another pod, so a pod directory that is gone stays gone.
 */
public final class KubeletPods {

    private static final KubeletLayout FILESYSTEM = new KubeletLayout(
            List.of("pods", KubeletLayout.ANY, "volumes", "kubernetes.io~csi", KubeletLayout.ANY, "mount"), 1);
    private static final KubeletLayout BLOCK = new KubeletLayout(List.of("plugins", "kubernetes.io", "csi",
            "volumeDevices", "publish", KubeletLayout.ANY, KubeletLayout.ANY), 6);

    private final KubeletPaths paths;

    public KubeletPods(KubeletPaths paths) {
        this.paths = paths;
    }

    /**
     * The UID of the pod a publication target belongs to, by the layout of its access type; empty for a target
     * anywhere else (then nothing about its pod can be known).
     *
     * @param target a path as {@link KubeletPaths#confine} returned it
     */
    public Optional<String> podOf(Path target, boolean block) {
        return (block ? BLOCK : FILESYSTEM).nameIn(paths.relative(target));
    }

    /**
     * The same, for a target as a record holds it and a kubelet root as given, without opening anything (for
     * {@code blocknode status}, which runs without the plugin): empty for a target not under {@code root}.
     */
    public static Optional<String> podOf(Path root, Path target, boolean block) {
        return KubeletLayout.relative(root, target).flatMap((block ? BLOCK : FILESYSTEM)::nameIn);
    }

    /**
     * True only when kubelet's pods directory is there and holds no entry named {@code uid}, looked up by
     * descriptor beneath the kubelet root. No pods directory, or a symlink on the way to it, is doubt, not
     * absence: whatever is decided on a pod being gone must never be decided on doubt.
     */
    public boolean isGone(String uid) throws VolumeException {
        Path podDirectory = paths.root().resolve("pods").resolve(OpenedPath.requireElement(uid));
        Optional<OpenedPath> pods;
        try {
            pods = paths.openParentIfPresent("pod directory", podDirectory);
        } catch (VolumeException refused) {
            if (refused.outcome() == VolumeException.Outcome.INVALID_ARGUMENT) {
                return false; // a symlink on the way: not kubelet's
            }
            throw refused;
        }
        if (pods.isEmpty()) {
            return false;
        }
        try (OpenedPath directory = pods.get()) {
            return directory.statChild(uid).isEmpty();
        } catch (IOException e) {
            throw VolumeException.internal("cannot look for pod directory " + podDirectory, e);
        }
    }
}
