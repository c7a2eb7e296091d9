package dev.blocknode.transport.nvme;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.WaitTimeoutException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.ContextList;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.Transport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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

    private static final Pattern REPLY = Pattern.compile("instance=(\\d+),cntlid=(\\d+)");

    /** How long each step may take. */
    public record Timeouts(Duration connect, Duration namespaceAppears, Duration controllerGoes) {
        public static final Timeouts DEFAULTS = new Timeouts(Duration.ofSeconds(30), Duration.ofSeconds(15),
                Duration.ofSeconds(30));
    }

    /**
     * The subsystem a volume reaches, through which portals, as which host: what its attachment records, and
     * what decides which controllers are its.
     */
    record Reached(String subsystemNqn, List<NvmePortal> portals, String hostNqn) {

        Reached {
            portals = List.copyOf(portals);
        }

        static Optional<Reached> of(Map<String, String> details) {
            String nqn = details.get(DETAIL_NQN);
            String portals = details.get(DETAIL_PORTALS);
            String host = details.get(DETAIL_HOST_NQN);
            if (nqn == null || portals == null || host == null) {
                return Optional.empty();
            }
            List<NvmePortal> parsed = new ArrayList<>();
            for (String portal : ContextList.items(portals)) {
                try {
                    parsed.add(NvmePortal.parse(portal));
                } catch (IllegalArgumentException unreadable) {
                    return Optional.empty();
                }
            }
            return Optional.of(new Reached(nqn, parsed, host));
        }

        List<ControllerKey> keys() {
            return portals.stream().map(p -> new ControllerKey(subsystemNqn, p, hostNqn)).toList();
        }

        Map<String, String> details() {
            return Map.of(DETAIL_NQN, subsystemNqn,
                    DETAIL_PORTALS, String.join(",", portals.stream().map(NvmePortal::toString).toList()),
                    DETAIL_HOST_NQN, hostNqn);
        }
    }

    private final Host host;
    private final Path hostConfig;
    private final FabricsDevice fabrics;
    private final SysfsWriter writer;
    private final DeviceWaiter waiter;
    private final Timeouts timeouts;
    private final NvmeControllers controllers;
    private final ControllerUsers users;
    private final NvmePathRepair pathRepair;
    private final KeyedLocks<ControllerKey> controllerLocks = new KeyedLocks<>();
    /**
     * Devices detach was called for: unmounted and flushed, so they use no controller any more, though their
     * records stay until detach returns. Without this, two volumes unstaged one after the other would each see
     * the other's record and keep the controllers, and both records would go with the controllers still there.
     * Forgotten when attach hands the device out again; empty after a restart, when the start-up recovery
     * detaches one volume at a time and the last one deletes.
     */
    private final Set<DeviceNumber> released = ConcurrentHashMap.newKeySet();

    public NvmeTcpTransport(Host host, DeviceWaiter waiter, StagedVolumes staged) {
        this(host, host.paths().nvmeHostDirectory(), FabricsDevice.of(host.paths()), SysfsWriter.DIRECT, waiter,
                staged, Timeouts.DEFAULTS, System::nanoTime);
    }

    NvmeTcpTransport(Host host, Path hostConfig, FabricsDevice fabrics, SysfsWriter writer, DeviceWaiter waiter,
                     StagedVolumes staged, Timeouts timeouts, LongSupplier nanoTime) {
        this.host = host;
        this.hostConfig = hostConfig;
        this.fabrics = fabrics;
        this.writer = writer;
        this.waiter = waiter;
        this.timeouts = timeouts;
        this.controllers = new NvmeControllers(host.paths());
        this.users = new ControllerUsers(staged, host.blockDevices(), host.paths(), controllers, hostConfig);
        this.pathRepair = new NvmePathRepair(controllers, waiter, timeouts.namespaceAppears(), this::reconnect,
                nanoTime);
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
    public void validate(AttachRequest request) throws VolumeException {
        KeyProblems.requireNone(this, request);
    }

    @Override
    public void check(AttachRequest request, KeyProblems problems) throws VolumeException {
        NvmeVolumeSpec.read(request, problems);
        problems.check(() -> DhchapKeys.from(request.secrets()));
    }

    @Override
    public Attachment attach(AttachRequest request) throws VolumeException {
        NvmeVolumeSpec spec = NvmeVolumeSpec.from(request);
        Optional<DhchapKeys> keys = DhchapKeys.from(request.secrets());
        HostIdentity identity = hostIdentity(spec);
        Reached reached = new Reached(spec.subsystemNqn(), spec.portals(), identity.hostNqn());
        requireMultipathFor(request.volumeId(), spec);
        List<NvmeControllers.Controller> reaching = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (ControllerKey key : reached.keys()) {
            try (KeyedLocks.Held ignored = controllerLocks.lock(key)) {
                reaching.add(ensureController(request.volumeId(), key, identity, keys));
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
                requireAuthenticated(request.volumeId(), reaching, keys.get());
            }
            return Phases.time("device_wait", () -> namespace(request.volumeId(), spec, reached, reaching));
        } catch (VolumeException refused) {
            undo(request.volumeId(), reached, v -> v.volumeId().equals(request.volumeId()), refused);
            throw refused;
        }
    }

    /**
     * The live controller for {@code key}, connecting one when there is none. Called with the key's lock
     * held, so two volumes of one subsystem never connect twice to one portal. A controller that exists but
     * is reconnecting is used as it is: the kernel would refuse a second one, and its path comes back alone.
     */
    private NvmeControllers.Controller ensureController(String volumeId, ControllerKey key, HostIdentity identity,
                                                        Optional<DhchapKeys> keys) throws IOException {
        Optional<NvmeControllers.Controller> existing = controllers.usable(key);
        if (existing.isPresent()) {
            return existing.get();
        }
        String options = "transport=tcp,traddr=" + key.portal().traddr() + ",trsvcid=" + key.portal().trsvcid()
                + ",nqn=" + key.subsystemNqn() + ",hostnqn=" + identity.hostNqn()
                + identity.hostId().map(id -> ",hostid=" + id).orElse("")
                + keys.map(DhchapKeys::options).orElse("");
        String reply = Phases.time("connect", () -> fabrics.connect(options, timeouts.connect()));
        Matcher answer = REPLY.matcher(reply);
        if (!answer.find()) {
            throw new IOException("/dev/nvme-fabrics answered \"" + reply + "\", not instance=N,cntlid=M");
        }
        String name = "nvme" + answer.group(1);
        LOG.info(() -> "volume " + volumeId + ": connected to " + key + " as " + name);
        return waiter.within(timeouts.connect(), "controller " + name + " of " + key + " in sysfs",
                () -> controllers.named(name).filter(c -> c.serves(key)));
    }

    /**
     * The repair's connect of a controller the kernel deleted: the stage's own, as the host the stage connected as
     * (the record's host NQN; a node whose host NQN changed since is not passed off as it), without keys (a volume
     * with keys is not reconnected, see {@link NvmePathRepair}).
     */
    private NvmeControllers.Controller reconnect(String volumeId, ControllerKey key, NvmeVolumeSpec spec)
            throws IOException, VolumeException {
        HostIdentity identity = hostIdentity(spec);
        if (!identity.hostNqn().equals(key.hostNqn())) {
            throw new IOException("this node's NVMe host NQN is no longer the one the volume was staged as");
        }
        try (KeyedLocks.Held ignored = controllerLocks.lock(key)) {
            return ensureController(volumeId, key, identity, Optional.empty());
        }
    }

    /**
     * Connects again the controllers of the volume that the kernel deleted after ctrl_loss_tmo (see
     * {@link NvmePathRepair}); a controller in any other state is left to the kernel, nothing is disconnected.
     */
    @Override
    public PathRepair repairPaths(AttachRequest request, Attachment attachment) throws VolumeException {
        return pathRepair.repair(request, attachment);
    }

    @Override
    public void repairEvery(Duration interval) {
        pathRepair.repairEvery(interval);
    }

    @Override
    public boolean mayRepairPaths(AttachRequest request, Attachment attachment) {
        try {
            return pathRepair.needed(attachment);
        } catch (IOException unsure) {
            return true; // the repair itself says what it cannot read
        }
    }

    /**
     * Refuses keys the controllers did not authenticate with: a kernel without DH-HMAC-CHAP (no dhchap_secret
     * attribute) accepts the option and connects unauthenticated, and a controller another volume connected
     * may have been made without keys or with others. Never a volume that looks authenticated and is not.
     */
    private void requireAuthenticated(String volumeId, List<NvmeControllers.Controller> reaching, DhchapKeys keys)
            throws VolumeException {
        for (NvmeControllers.Controller controller : reaching) {
            try {
                Optional<String> hostKey = controllers.attribute(controller, DhchapKeys.HOST_KEY);
                if (hostKey.isEmpty()) {
                    throw VolumeException.precondition("volume " + volumeId + ": the stage secrets hold "
                            + "DH-HMAC-CHAP keys, but this node's kernel cannot authenticate NVMe connections "
                            + "(controller " + controller.name() + " has no " + DhchapKeys.HOST_KEY
                            + " attribute: CONFIG_NVME_AUTH is off); refusing an unauthenticated volume");
                }
                if (!keys.shownBy(hostKey.get(), controllers.attribute(controller, DhchapKeys.CONTROLLER_KEY))) {
                    throw VolumeException.precondition("volume " + volumeId + ": controller " + controller.name()
                            + " of " + controller.subsystemNqn() + " was connected without the DH-HMAC-CHAP keys "
                            + "of the stage secrets (another volume of the subsystem connected it); refusing");
                }
            } catch (IOException e) {
                throw VolumeException.internal("volume " + volumeId + ": cannot read the authentication of "
                        + "controller " + controller.name(), e);
            }
        }
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
    private Attachment namespace(String volumeId, NvmeVolumeSpec spec, Reached reached,
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
                    + " appeared on " + spec.subsystemNqn() + " within " + timeouts.namespaceAppears().toSeconds()
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
            details.put(DETAIL_CONTROLLERS, String.join(",", search.matching().stream()
                    .map(p -> p.controller().portal().map(NvmePortal::toString).orElse("?") + "="
                            + p.controller().name()).toList()));
            Attachment attachment = new Attachment(NAME, host.paths().dev().resolve(disk), number,
                    controllers.wwid(disk).orElse(spec.namespace().toString()), details);
            released.remove(number);
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
                    waiter.deadlineAfter(timeouts.namespaceAppears()),
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
                    || !Files.exists(host.paths().dev().resolve(path.disk()))) {
                return false;
            }
        }
        return true;
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
        released.add(attachment.number());
        List<String> failures = release(reached, v -> v.device().equals(Optional.of(attachment.number())));
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
            identity = hostIdentity(spec);
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
        List<String> failures = release(new Reached(spec.subsystemNqn(), spec.portals(), identity.hostNqn()),
                v -> v.volumeId().equals(request.volumeId()));
        if (!failures.isEmpty()) {
            throw VolumeException.internal("volume " + request.volumeId() + ": cannot undo the interrupted attach: "
                    + String.join("; ", failures), null);
        }
    }

    /** Best effort after a refusal: the refusal is what the caller gets; a failed undo is added to it. */
    private void undo(String volumeId, Reached reached, Predicate<StagedVolumes.StagedVolume> self,
                      VolumeException refusal) {
        List<String> failures = release(reached, self);
        if (!failures.isEmpty()) {
            refusal.addSuppressed(VolumeException.internal("undoing the refused attach failed: "
                    + String.join("; ", failures), null));
            LOG.warning(() -> "volume " + volumeId + ": cannot undo the refused attach: "
                    + String.join("; ", failures));
        }
    }

    /**
     * Deletes the controllers of every portal that nothing else uses; returns what failed. The records of
     * {@code self} and of volumes already released do not count as users.
     */
    private List<String> release(Reached reached, Predicate<StagedVolumes.StagedVolume> self) {
        List<String> failures = new ArrayList<>();
        Predicate<StagedVolumes.StagedVolume> notUsers =
                self.or(v -> v.device().filter(released::contains).isPresent());
        for (ControllerKey key : reached.keys()) {
            try (KeyedLocks.Held ignored = controllerLocks.lock(key)) {
                deleteIfUnused(key, notUsers);
            } catch (IOException e) {
                failures.add(key.portal() + ": " + e.getMessage());
            }
        }
        return failures;
    }

    /** Called with the key's lock held. */
    private void deleteIfUnused(ControllerKey key, Predicate<StagedVolumes.StagedVolume> self) throws IOException {
        for (NvmeControllers.Controller controller : controllers.serving(key)) {
            if (!controller.going()) {
                Optional<String> holders = users.holding(controller, key, self);
                if (holders.isPresent()) {
                    LOG.info(() -> "keeping controller " + controller.name() + " of " + key + ": still used by "
                            + holders.get());
                    continue;
                }
                try {
                    Phases.run("disconnect", () -> writer.write(controllers.attributePath(controller,
                            "delete_controller"), "1"));
                } catch (NoSuchFileException gone) {
                    continue; // deleted meanwhile by the kernel (ctrl_loss_tmo) or by hand
                }
            }
            waiter.within(timeouts.controllerGoes(), "controller " + controller.name() + " of " + key
                    + " to be deleted", () -> controllers.named(controller.name())
                    .filter(c -> c.serves(key)).isPresent() ? Optional.empty() : Optional.of(true));
            LOG.info(() -> "deleted controller " + controller.name() + " of " + key);
        }
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
                    writer.write(controllers.attributePath(controller.get(), "rescan_controller"), "1");
                }
            }
        } catch (IOException e) {
            throw VolumeException.internal("rescanning the controllers of device " + attachment.device()
                    + " failed", e);
        }
    }

    private HostIdentity hostIdentity(NvmeVolumeSpec spec) throws VolumeException {
        try {
            return spec.host(HostIdentity.configured(hostConfig));
        } catch (IOException e) {
            throw VolumeException.internal("cannot read this node's NVMe host identity in " + hostConfig, e);
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
