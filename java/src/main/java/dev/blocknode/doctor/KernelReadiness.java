package dev.blocknode.doctor;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.host.KernelFeatures;
import dev.blocknode.os.host.KernelFeatures.Feature;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountTable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * What every transport needs of the kernel and the container: the native library, the kernel features the plugin
 * uses where the kernel has them (each with a slower fallback, so a missing one is a warning), and, when given, the
 * kubelet root: a directory whose mount is shared, or the mounts the plugin makes there never reach kubelet and
 * the pods.
 */
final class KernelReadiness {

    private final HostPaths paths;
    private final KernelFeatures features;
    private final Optional<Path> kubeletRoot;

    KernelReadiness(HostPaths paths, KernelFeatures features, Optional<Path> kubeletRoot) {
        this.paths = paths;
        this.features = features;
        this.kubeletRoot = kubeletRoot;
    }

    TransportReadiness check() {
        List<Finding> findings = new ArrayList<>();
        Optional<String> noLibrary = features.missing(Feature.NATIVE_LIBRARY);
        if (noLibrary.isPresent()) {
            findings.add(Finding.error("native-library", noLibrary.get() + ": every volume operation fails, and the"
                    + " kernel features cannot be asked", "run the plugin's image as shipped (the library is in the"
                    + " jar); on a host whose /tmp is noexec, set -Dblocknode.native.workdir to an exec directory"));
        } else {
            findings.add(Finding.ok("native-library", "the native library is loaded"));
            findings.add(feature(Feature.OPENAT2, "openat2", "openat2 resolves paths beneath the kubelet root",
                    "paths beneath the kubelet root are resolved one element at a time (safe, slower)"));
            findings.add(feature(Feature.MOUNT_SETATTR, "mount-setattr", "mount_setattr attaches a bind with its"
                    + " flags", "binds with flags are prepared in a private scratch mount and moved into place"));
            findings.add(feature(Feature.UEVENT_SOCKET, "uevent-socket", "device waits end on the kernel's"
                    + " uevents", "device waits poll sysfs instead of waking on uevents (slower attaches)"));
        }
        kubeletRoot.ifPresent(root -> findings.add(kubeletRoot(root)));
        return TransportReadiness.of(TransportReadiness.KERNEL, findings);
    }

    private Finding feature(Feature feature, String check, String ok, String fallback) {
        Optional<String> missing = features.missing(feature);
        return missing.isEmpty() ? Finding.ok(check, ok) : Finding.warning(check, missing.get() + ": " + fallback,
                "run a newer kernel (or a seccomp profile that allows it); the plugin works without it");
    }

    private Finding kubeletRoot(Path root) {
        String fix = "give the plugin the kubelet's --root-dir as --kubelet-root, mounted with mountPropagation:"
                + " Bidirectional (the chart's kubeletRoot does)";
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return Finding.error("kubelet-root", "the kubelet root " + root + " does not exist", fix);
        }
        if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
            return Finding.error("kubelet-root", "the kubelet root " + root + " is not a directory", fix);
        }
        Optional<MountEntry> mount;
        try {
            Path real = root.toRealPath();
            mount = MountTable.read(paths.mountInfo()).stream().filter(m -> real.startsWith(m.mountPoint()))
                    .max(Comparator.comparingInt(m -> m.mountPoint().getNameCount()));
        } catch (IOException | RuntimeException e) {
            return Finding.warning("kubelet-root", "the mount of the kubelet root " + root + " cannot be read: "
                    + e.getMessage(), "check that /proc/self/mountinfo is readable in the container");
        }
        if (mount.isEmpty()) {
            return Finding.warning("kubelet-root", "no mount holds the kubelet root " + root, fix);
        }
        if (!mount.get().shared()) {
            return Finding.error("kubelet-root", "the kubelet root " + root + " is on a mount (" + mount.get()
                    .mountPoint() + ") that is not shared: the mounts the plugin makes there never reach kubelet"
                    + " or the pods", fix + "; on the host the kubelet root must be on a shared mount (mount"
                    + " --make-rshared /)");
        }
        return Finding.ok("kubelet-root", "the kubelet root " + root + " is a directory on a shared mount ("
                + mount.get().mountPoint() + ")");
    }
}
