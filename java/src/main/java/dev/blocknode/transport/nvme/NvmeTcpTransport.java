package dev.blocknode.transport.nvme;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.san.FenceSettings;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Logger;

/**
 * NVMe over TCP namespaces. Per portal: one controller, connected through /dev/nvme-fabrics (see
 * {@link FabricsDevice} for why not nvme-cli) and shared by every volume of that subsystem; a live one found
 * in sysfs is reused, so a restart or a second volume never connects twice. Then the namespace: waited for
 * (its disk's uevent ends the wait), its identity checked on every controller that reaches it, and the disk
 * handed out is the native multipath head over all of them. Detaching deletes a controller only when no other
 * volume's staging record names it and no disk of it is held ({@link ControllerUsers}); a refused or
 * interrupted attach is undone by the same rule. Everything it needs later is in the record (subsystem,
 * portals, host NQN) or in sysfs, never in memory, so a restart at any point loses nothing.
 *
 * <p>NVMe/TCP sends no uevent when a path is lost or its ANA state changes: path health is read from sysfs
 * (controller state, path ANA state) each time it is asked.
 */
public final class NvmeTcpTransport implements Transport {

    private static final Logger LOG = Logger.getLogger(NvmeTcpTransport.class.getName());

    public static final String NAME = "nvme-tcp";
    /** Attachment detail keys. */
    static final String DETAIL_NQN = "subsysNQN";
    static final String DETAIL_PORTALS = "portals";
    static final String DETAIL_HOST_NQN = "hostNQN";
    static final String DETAIL_CONTROLLERS = "controllers";
    /** Only where one was configured: what fencing requires and the path repair checks a controller against. */
    static final String DETAIL_HOST_ID = "hostID";

    /** How long each step may take. */
    public record Timeouts(Duration connect, Duration namespaceAppears, Duration controllerGoes) {
        public static final Timeouts DEFAULTS = new Timeouts(Duration.ofSeconds(30), Duration.ofSeconds(15),
                Duration.ofSeconds(30));
    }

    private final Host host;
    private final Fabric fabric;
    private final NvmeControllers controllers;
    private final NvmeConnections connections;
    private final NamespaceWait namespaces;
    private final NvmePathRepair pathRepair;
    private final NamespaceFencing fencing;

    /**
     * {@code fence}: the takeover time and command limit SCSI fencing uses too; {@code repairInterval}: the repair
     * loop's, {@link Duration#ZERO} when there is none.
     */
    public NvmeTcpTransport(Host host, DeviceWaiter waiter, FenceSettings fence, StagedVolumes staged,
                            Duration repairInterval) {
        this(host, new Fabric(host.paths().nvmeHostDirectory(), FabricsDevice.of(host.paths()), SysfsWriter.DIRECT,
                Timeouts.DEFAULTS), waiter, fence, staged, repairInterval);
    }

    /** The repair's back-off measures with {@code fence}'s clock, as the takeover rule does. */
    NvmeTcpTransport(Host host, Fabric fabric, DeviceWaiter waiter, FenceSettings fence, StagedVolumes staged,
                     Duration repairInterval) {
        this.host = host;
        this.fabric = fabric;
        this.controllers = new NvmeControllers(host.paths());
        this.connections = new NvmeConnections(host, controllers, fabric, waiter, staged);
        this.namespaces = new NamespaceWait(host.paths(), controllers, waiter, fabric.timeouts().namespaceAppears());
        this.pathRepair = new NvmePathRepair(controllers, waiter, fabric.timeouts().namespaceAppears(),
                connections::reconnect, repairInterval, fence.nanoTime());
        this.fencing = new NamespaceFencing(host.nvme(), controllers, fence);
        PathRepairs.register(NAME, PathRepairs.CONTROLLER);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<String> identifyingKeys() {
        return Set.of(NvmeVolumeSpec.SUBSYSTEM_NQN, NvmeVolumeSpec.PORTALS);
    }

    @Override
    public AttachPlan validate(AttachRequest request) throws VolumeException {
        return KeyProblems.parsed(problems -> NvmeAttachPlan.read(request, problems));
    }

    @Override
    public void check(AttachRequest request, KeyProblems problems) throws VolumeException {
        NvmeAttachPlan.read(request, problems);
    }

    @Override
    public Attachment attach(AttachPlan plan) throws VolumeException {
        NvmeAttachPlan own = AttachPlan.own(NvmeAttachPlan.class, plan, this);
        AttachRequest request = own.request();
        NvmeVolumeSpec spec = own.spec();
        Optional<DhchapKeys> keys = own.keys();
        HostIdentity identity = connections.hostIdentity(spec);
        Reached reached = new Reached(spec.subsystemNqn(), spec.portals(), identity.hostNqn());
        requireMultipathFor(request.volumeId(), spec);
        List<NvmeControllers.Controller> reaching = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (ControllerKey key : reached.keys()) {
            try {
                reaching.add(connections.connect(request.volumeId(), key, identity, keys));
            } catch (IOException e) {
                failures.add(key.portal() + ": " + e.getMessage());
            }
        }
        try {
            if (reaching.isEmpty()) {
                throw VolumeException.internal("volume " + request.volumeId() + ": no controller of "
                        + spec.subsystemNqn() + " could be connected (" + String.join("; ", failures) + ")", null);
            }
            if (!failures.isEmpty()) {
                LOG.warning(() -> "volume " + request.volumeId() + ": attaching through " + reaching.size() + " of "
                        + spec.portals().size() + " portals; " + String.join("; ", failures));
            }
            if (keys.isPresent()) {
                connections.requireAuthenticated(request.volumeId(), reaching, keys.get());
            }
            Attachment attachment = ControllerHostIds.recorded(Phases.time("device_wait",
                    () -> namespaces.namespace(request.volumeId(), spec, reached, reaching)), identity);
            connections.handedOut(attachment.number());
            return attachment;
        } catch (VolumeException refused) {
            connections.undo(request.volumeId(), reached, v -> v.volumeId().equals(request.volumeId()), refused);
            throw refused;
        }
    }

    /**
     * NVMe reservations through the namespace's head ({@link NamespaceFencing}): a volume with an explicit host ID
     * on a namespace with reservations is fenced as a SCSI LUN is.
     */
    @Override
    public Optional<Fencing> fencing() {
        return Optional.of(fencing);
    }

    /**
     * A namespace disk whose every controller is NVMe/TCP (a local PCIe drive is never ours): its subsystem,
     * portals and host, read from the controllers, are what detach releases.
     */
    @Override
    public Optional<Attachment> attachmentOf(DeviceNumber device) throws VolumeException {
        try {
            Optional<String> disk = controllers.diskOf(device);
            if (disk.isEmpty()) {
                return Optional.empty();
            }
            List<NvmeControllers.NamespacePath> paths = controllers.pathsOf(disk.get());
            if (paths.isEmpty() || !paths.stream().allMatch(p -> p.controller().transport().equals("tcp")
                    && p.controller().portal().isPresent())) {
                return Optional.empty();
            }
            NvmeControllers.Controller first = paths.get(0).controller();
            List<NvmePortal> portals = paths.stream().map(p -> p.controller().portal().orElseThrow())
                    .distinct().toList();
            Reached reached = new Reached(first.subsystemNqn(), portals, first.hostNqn());
            return Optional.of(new Attachment(NAME, host.paths().dev().resolve(disk.get()), device,
                    controllers.wwid(disk.get()).orElse(""), reached.details()));
        } catch (IOException e) {
            throw VolumeException.internal("cannot trace device " + device + " to its NVMe controllers", e);
        }
    }

    @Override
    public void detach(Attachment attachment) throws VolumeException {
        Reached reached = Reached.of(attachment.details()).orElseThrow(() -> VolumeException.internal(
                "the staging record lacks the NVMe subsystem, portals or host of device " + attachment.device()
                        + "; its controllers were left connected", null));
        connections.releasing(attachment.number());
        List<String> failures = connections.release(reached, v -> v.device().equals(Optional.of(attachment.number())));
        if (!failures.isEmpty()) {
            throw VolumeException.internal("device " + attachment.device() + " is flushed, but deleting its "
                    + "controllers failed: " + String.join("; ", failures), null);
        }
    }

    /**
     * An attach cut short may have connected controllers: those no other volume uses and that hold no claimed
     * disk are deleted. They are found in sysfs by subsystem, portal and host, never by a remembered name.
     */
    @Override
    public void abandon(AttachRequest request) throws VolumeException {
        NvmeVolumeSpec spec = NvmeVolumeSpec.from(request);
        HostIdentity identity;
        try {
            identity = connections.hostIdentity(spec);
        } catch (VolumeException noHost) {
            if (noHost.outcome() != VolumeException.Outcome.FAILED_PRECONDITION) {
                throw noHost;
            }
            // An attach without a host NQN is refused before it connects anything: nothing to undo. (Were the
            // file removed since a connect, its controllers would stay: said here, for an operator.)
            LOG.warning(() -> "volume " + request.volumeId() + ": no controller to undo without a host NQN ("
                    + noHost.getMessage() + ")");
            return;
        }
        List<String> failures = connections.release(
                new Reached(spec.subsystemNqn(), spec.portals(), identity.hostNqn()),
                v -> v.volumeId().equals(request.volumeId()));
        if (!failures.isEmpty()) {
            throw VolumeException.internal("volume " + request.volumeId() + ": cannot undo the interrupted attach: "
                    + String.join("; ", failures), null);
        }
    }

    /**
     * Connects again the controllers of a volume that the kernel deleted after ctrl_loss_tmo ({@link NvmePathRepair});
     * a controller in any other state is left to the kernel, nothing is disconnected.
     */
    @Override
    public Optional<PathRepair> pathRepair() {
        return Optional.of(pathRepair);
    }

    /**
     * How the namespace's paths serve I/O: a path serves when its controller is live and its ANA state is
     * optimized or non-optimized (or the subsystem has no ANA). Read from sysfs each time: the kernel sends no
     * uevent when a controller starts reconnecting or an ANA state changes.
     */
    @Override
    public Optional<PathReport> pathHealth(Attachment attachment) throws IOException {
        Optional<Reached> reached = Reached.of(attachment.details());
        if (reached.isEmpty()) {
            return Optional.empty();
        }
        Optional<String> disk = controllers.diskOf(attachment.number());
        int serving = 0;
        List<String> failures = new ArrayList<>();
        for (ControllerKey key : reached.get().keys()) {
            Optional<NvmeControllers.Controller> controller = controllers.usable(key);
            if (controller.isEmpty()) {
                failures.add(key.portal() + " has no controller" + pathRepair.lastFailure(key)
                        .map(why -> " (reconnecting it failed: " + why + ")").orElse(""));
                continue;
            }
            String name = controller.get().name() + " (" + key.portal() + ")";
            if (!controller.get().live()) {
                failures.add(name + " is " + controller.get().state());
                continue;
            }
            Optional<NvmeControllers.NamespacePath> path = disk.isEmpty() ? Optional.empty()
                    : controllers.namespaces(controller.get()).stream()
                    .filter(p -> p.disk().equals(disk.get())).findFirst();
            if (path.isEmpty()) {
                failures.add(name + " does not reach the namespace");
                continue;
            }
            String ana = path.get().anaState().orElse("optimized");
            if (ana.equals("optimized") || ana.equals("non-optimized")) {
                serving++;
            } else {
                failures.add(name + " is ANA " + ana);
            }
        }
        String subject = "namespace " + disk.orElse(attachment.device().getFileName().toString());
        Optional<String> problem = failures.isEmpty() ? Optional.empty()
                : Optional.of(subject + " serves on " + serving + " path(s); " + String.join(", ", failures));
        return Optional.of(new PathReport(serving, failures, problem));
    }

    /** After the array grew the namespace: each controller rescans it, which resizes the disk. */
    @Override
    public void refreshSize(Attachment attachment) throws VolumeException {
        Reached reached = Reached.of(attachment.details()).orElseThrow(() -> VolumeException.internal(
                "the staging record lacks the NVMe subsystem of device " + attachment.device(), null));
        try {
            for (ControllerKey key : reached.keys()) {
                Optional<NvmeControllers.Controller> controller = controllers.usable(key);
                if (controller.isPresent()) {
                    fabric.writer().write(controllers.attributePath(controller.get(), "rescan_controller"), "1");
                }
            }
        } catch (IOException e) {
            throw VolumeException.internal("rescanning the controllers of device " + attachment.device()
                    + " failed", e);
        }
    }

    /**
     * Several portals need the kernel's native NVMe multipath (on unless nvme_core.multipath=N): without it each
     * controller makes its own disk of the namespace, and blocknode builds no dm-multipath map over those.
     */
    private void requireMultipathFor(String volumeId, NvmeVolumeSpec spec) throws VolumeException {
        if (spec.portals().size() < 2) {
            return;
        }
        try {
            String value = Files.readString(host.paths().nvmeCoreMultipath(), StandardCharsets.US_ASCII).strip();
            if (value.equals("N")) {
                throw VolumeException.precondition("volume " + volumeId + " names " + spec.portals().size()
                        + " portals, but the kernel's native NVMe multipath is off (nvme_core.multipath=N) and"
                        + " blocknode does not build dm-multipath maps over NVMe; use one portal or turn it on");
            }
        } catch (NoSuchFileException notLoaded) {
            // nvme_core is not loaded yet: the first connect loads it with its default, multipath on
        } catch (IOException e) {
            throw VolumeException.internal("cannot read nvme_core's multipath parameter", e);
        }
    }
}
