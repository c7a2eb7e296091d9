package dev.blocknode.volume.kubelet;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The PersistentVolume's name, where kubelet puts it in a volume's paths (relative to its root; kubelet's
 * csi_attacher.go, csi_mounter.go and csi_block.go):
 * <pre>
 *   filesystem staging, before Kubernetes 1.24   plugins/kubernetes.io/csi/pv/PV_NAME/globalmount
 *   filesystem publication                       pods/POD_UID/volumes/kubernetes.io~csi/PV_NAME/mount
 *   raw block staging                            plugins/kubernetes.io/csi/volumeDevices/staging/PV_NAME
 *   raw block publication                        plugins/kubernetes.io/csi/volumeDevices/publish/PV_NAME/POD_UID
 * </pre>
 * A filesystem volume's staging path since 1.24 holds a hash of the volume id instead
 * ({@code plugins/kubernetes.io/csi/DRIVER/SHA256/globalmount}), so such a volume's PV is known once it is
 * published. No CSI call carries the name: this is for an operator's eyes (metrics), never for a decision.
 */
public final class KubeletPvNames {

    private static final String ANY = KubeletLayout.ANY;
    private static final List<KubeletLayout> LAYOUTS = List.of(
            new KubeletLayout(List.of("plugins", "kubernetes.io", "csi", "pv", ANY, "globalmount"), 4),
            new KubeletLayout(List.of("pods", ANY, "volumes", "kubernetes.io~csi", ANY, "mount"), 4),
            new KubeletLayout(List.of("plugins", "kubernetes.io", "csi", "volumeDevices", "staging", ANY), 5),
            new KubeletLayout(List.of("plugins", "kubernetes.io", "csi", "volumeDevices", "publish", ANY, ANY), 5));

    private KubeletPvNames() {
    }

    /**
     * The PV name in a staging or publication path as a record holds it, under kubelet's root as given; empty for
     * a path outside the root or of another layout. Nothing is opened: the path is only read.
     */
    public static Optional<String> of(Path root, Path path) {
        return KubeletLayout.relative(root, path)
                .flatMap(relative -> LAYOUTS.stream().flatMap(layout -> layout.nameIn(relative).stream()).findFirst());
    }
}
