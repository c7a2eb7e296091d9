package dev.blocknode.volume.kubelet;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The PV's name where kubelet's layouts hold it, and nothing where they do not. */
class KubeletPvNamesUnitTest {

    private static final Path ROOT = Path.of("/var/lib/kubelet");

    private static Optional<String> pv(String relative) {
        return KubeletPvNames.of(ROOT, ROOT.resolve(relative));
    }

    @Test
    void eachLayoutThatNamesThePvGivesIt() {
        assertEquals(Optional.of("pv-a"), pv("plugins/kubernetes.io/csi/pv/pv-a/globalmount"));
        assertEquals(Optional.of("pv-b"), pv("pods/0f6c3a9e-1b2d/volumes/kubernetes.io~csi/pv-b/mount"));
        assertEquals(Optional.of("pv-c"), pv("plugins/kubernetes.io/csi/volumeDevices/staging/pv-c"));
        assertEquals(Optional.of("pv-d"), pv("plugins/kubernetes.io/csi/volumeDevices/publish/pv-d/0f6c3a9e"));
    }

    @Test
    void aHashedStagingPathOrAnotherPlaceNamesNone() {
        assertEquals(Optional.empty(), pv("plugins/kubernetes.io/csi/block.csi.blocknode.dev/9f86d0818/globalmount"));
        assertEquals(Optional.empty(), pv("pods/uid/volumes/kubernetes.io~csi/pv-b/mount/deeper"));
        assertEquals(Optional.empty(), pv("plugins/kubernetes.io/csi/volumeDevices/staging"));
        assertEquals(Optional.empty(), KubeletPvNames.of(ROOT, Path.of("/mnt/pods/u/volumes/kubernetes.io~csi/p/m")));
        assertEquals(Optional.empty(), KubeletPvNames.of(ROOT, ROOT));
        assertEquals(Optional.empty(), KubeletPvNames.of(ROOT,
                ROOT.resolve("pods/u/volumes/kubernetes.io~csi/../../../../../../etc/mount")));
    }
}
