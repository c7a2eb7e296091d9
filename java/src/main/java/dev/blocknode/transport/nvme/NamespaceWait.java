package dev.blocknode.transport.nvme;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.WaitTimeoutException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.Attachment;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Logger;

/**
 * The wait at a stage for the volume's namespace on the controllers that reach it: until every connected controller
 * reaches it and its disk is there, or one reaches another namespace at its NSID (the portals do not serve the
 * namespace asked for), then the check that every path leads to one disk (the native multipath head).
 */
final class NamespaceWait {

    /** Its lines are the transport's, as before it was split out. */
    private static final Logger LOG = Logger.getLogger(NvmeTcpTransport.class.getName());

    private final HostPaths paths;
    private final NvmeControllers controllers;
    private final DeviceWaiter waiter;
    private final Duration namespaceAppears;

    NamespaceWait(HostPaths paths, NvmeControllers controllers, DeviceWaiter waiter, Duration namespaceAppears) {
        this.paths = paths;
        this.controllers = controllers;
        this.waiter = waiter;
        this.namespaceAppears = namespaceAppears;
    }

    /**
     * What the wait for the namespace found: the paths that match, why others do not, and how many live
     * controllers do not reach it yet (a controller that is reconnecting is not waited for: its path joins
     * the head by itself when it is back).
     */
    private record Search(List<NvmeControllers.NamespacePath> matching, List<String> mismatches,
                          List<String> missing, int pending) {
    }

    /**
     * Waits until every connected controller reaches the namespace and its disk is there, then checks that
     * they all lead to one disk. A controller that reaches a namespace with the volume's NSID but another
     * identity ends the wait at once: the portals do not serve the namespace asked for.
     */
    Attachment namespace(String volumeId, NvmeVolumeSpec spec, Reached reached,
                                 List<NvmeControllers.Controller> reaching) throws VolumeException {
        Search search;
        boolean ready;
        try {
            search = awaitNamespace(spec, reaching);
            ready = disksReady(search.matching());
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the namespaces of "
                    + spec.subsystemNqn(), e);
        }
        if (!search.mismatches().isEmpty()) {
            throw VolumeException.precondition("volume " + volumeId + ": the namespace of " + spec.subsystemNqn()
                    + " is not the one volume_context names (" + spec.namespace() + "): "
                    + String.join("; ", search.mismatches()));
        }
        if (!ready) {
            throw VolumeException.precondition("volume " + volumeId + ": no namespace with " + spec.namespace()
                    + " appeared on " + spec.subsystemNqn() + " within " + namespaceAppears.toSeconds()
                    + " s (" + String.join("; ", search.missing()) + ")");
        }
        Set<String> disks = new LinkedHashSet<>();
        search.matching().forEach(p -> disks.add(p.disk()));
        if (disks.size() > 1) {
            throw VolumeException.precondition("volume " + volumeId + ": its namespace is a separate disk on each "
                    + "controller " + disks + ": the kernel's native NVMe multipath is off for this subsystem, and"
                    + " blocknode does not build dm-multipath maps over NVMe; use one portal or nvme_core.multipath=Y");
        }
        if (!search.missing().isEmpty()) {
            LOG.warning(() -> "volume " + volumeId + ": attaching with " + search.matching().size() + " path(s); "
                    + String.join("; ", search.missing()));
        }
        String disk = disks.iterator().next();
        try {
            DeviceNumber number = controllers.deviceNumber(disk).orElseThrow(() ->
                    new NoSuchFileException("/sys/block/" + disk));
            Map<String, String> details = new LinkedHashMap<>(reached.details());
            details.put(NvmeTcpTransport.DETAIL_CONTROLLERS, String.join(",", search.matching().stream()
                    .map(p -> p.controller().portal().map(NvmePortal::toString).orElse("?") + "="
                            + p.controller().name()).toList()));
            Attachment attachment = new Attachment(NvmeTcpTransport.NAME, paths.dev().resolve(disk), number,
                    controllers.wwid(disk).orElse(spec.namespace().toString()), details);
            LOG.info(() -> "volume " + volumeId + ": namespace " + spec.namespace() + " is " + disk + " over "
                    + search.matching().size() + " path(s)");
            return attachment;
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read disk " + disk, e);
        }
    }

    /** The search once it is complete or refused, or as it stands at the deadline. */
    private Search awaitNamespace(NvmeVolumeSpec spec, List<NvmeControllers.Controller> reaching)
            throws IOException {
        try {
            return waiter.until("namespace " + spec.namespace() + " of " + spec.subsystemNqn() + " on "
                            + reaching.stream().map(NvmeControllers.Controller::name).toList(),
                    waiter.deadlineAfter(namespaceAppears),
                    () -> {
                        Search now = search(spec, reaching);
                        boolean complete = now.pending() == 0 && now.mismatches().isEmpty()
                                && disksReady(now.matching());
                        return complete || !now.mismatches().isEmpty() ? Optional.of(now) : Optional.empty();
                    });
        } catch (WaitTimeoutException timedOut) {
            return search(spec, reaching);
        }
    }

    private Search search(NvmeVolumeSpec spec, List<NvmeControllers.Controller> reaching) throws IOException {
        List<NvmeControllers.NamespacePath> matching = new ArrayList<>();
        List<String> mismatches = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        int pending = 0;
        NamespaceIdentity wanted = spec.namespace();
        for (NvmeControllers.Controller connected : reaching) {
            NvmeControllers.Controller controller = controllers.named(connected.name()).orElse(connected);
            List<NvmeControllers.NamespacePath> paths = controllers.namespaces(controller);
            Optional<NvmeControllers.NamespacePath> match = paths.stream()
                    .filter(p -> wanted.mismatch(p.reported()).isEmpty()).findFirst();
            if (match.isPresent()) {
                matching.add(match.get());
                continue;
            }
            Optional<NvmeControllers.NamespacePath> sameNsid = wanted.nsid().isEmpty() ? Optional.empty()
                    : paths.stream().filter(p -> p.reported().nsid().equals(wanted.nsid())).findFirst();
            if (sameNsid.isPresent()) {
                mismatches.add(sameNsid.get().name() + " on " + controller.name() + " reports "
                        + wanted.mismatch(sameNsid.get().reported()).orElseThrow());
            } else {
                missing.add(controller.name() + " (" + controller.portal().map(NvmePortal::toString).orElse("?")
                        + ", " + controller.state() + ") reaches " + (paths.isEmpty() ? "no namespace"
                        : "only " + paths.stream().map(NvmeControllers.NamespacePath::name).toList()));
                if (controller.live()) {
                    pending++;
                }
            }
        }
        return new Search(matching, mismatches, missing, pending);
    }

    /** The disk of every matching path is there: its sysfs entry with a device number, and its /dev node. */
    private boolean disksReady(List<NvmeControllers.NamespacePath> matching) throws IOException {
        if (matching.isEmpty()) {
            return false;
        }
        for (NvmeControllers.NamespacePath path : matching) {
            if (controllers.deviceNumber(path.disk()).isEmpty()
                    || !Files.exists(paths.dev().resolve(path.disk()))) {
                return false;
            }
        }
        return true;
    }
}
