package dev.blocknode.transport.nvme;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.WaitTimeoutException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.RetryBackoff;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * Connects again the controllers of a staged NVMe/TCP volume that the kernel deleted (a portal unreachable for
 * longer than ctrl_loss_tmo): the same connect the stage made (subsystem, portal, host NQN and ID, through
 * /dev/nvme-fabrics), then the namespace it reaches is checked against the volume's identity, and the path counts
 * as back only when it joined the volume's own disk (the native multipath head). What it leaves alone, on purpose:
 * <ul>
 *   <li>a controller that exists in any state but deleting or dead (connecting, resetting): the kernel reconnects
 *       it by itself, and a second connect to its portal is refused anyway;</li>
 *   <li>a controller connected to the wrong namespace, or whose namespace became another disk (native multipath
 *       off): reported, never used, never disconnected here (the volume's unstage deletes it with the others);</li>
 *   <li>a volume whose disk is gone (its last controller deleted on a kernel that drops the head then): a new
 *       connect would make a new disk under nobody's filesystem; it waits for the volume to be staged again;</li>
 *   <li>a volume staged with DH-HMAC-CHAP keys: the keys came with the stage's secrets and are not kept, so its
 *       lost controllers are reported, not connected without them.</li>
 * </ul>
 * A connect that failed is not tried again for that portal for a growing while ({@link RetryBackoff}), whichever
 * volume asks: one controller serves every volume of the subsystem at that portal. One refused (the portal does not
 * listen yet) or failed at once waits one first wait each time, at most one repair interval: it costs nothing, and the
 * portal's return is then noticed on the next pass however long the outage was.
 */
final class NvmePathRepair implements PathRepair {

    /**
     * Shorter than the iSCSI login's: a connect to a portal whose port is back but not yet serving the subsystem
     * fails at once, and an outage that ends soon after must not keep the path lost for longer than a few passes.
     */
    static final Duration CONNECT_BACKOFF_FIRST = Duration.ofSeconds(10);
    static final Duration CONNECT_BACKOFF_MAX = Duration.ofMinutes(16);
    /**
     * A connect that the kernel refused (ECONNREFUSED: the portal does not listen yet), however long it took to say
     * so, or that failed in any other way within this, is tried again on the next pass however often it failed
     * before; a slower failure (a timeout) doubles the wait. The errno counts first because under load the refusal
     * itself can take longer: in the VM tier (TCG guest, host load 12) one took 2.1 s, doubled the wait to 10 s, and
     * kept a path that was back lost for a whole interval more.
     */
    static final Duration FAILED_AT_ONCE = Duration.ofSeconds(2);

    /**
     * The stage's connect for one controller, with its lock held; the volume's host identity from its contexts,
     * refused when it is no longer the host ID the volume was staged with ({@code stagedHostId}, when recorded).
     */
    @FunctionalInterface
    interface Connector {
        NvmeControllers.Controller connect(String volumeId, ControllerKey key, NvmeVolumeSpec spec,
                                           Optional<String> stagedHostId) throws IOException, VolumeException;
    }

    private final NvmeControllers controllers;
    private final DeviceWaiter waiter;
    private final Duration namespaceAppears;
    private final Connector connector;
    private final RetryBackoff<ControllerKey> failedConnects;
    private final LongSupplier nanoTime;
    private final ControllerHostIds hostIds;

    /** {@code repairInterval}: a refused connect is tried again one interval later, at the latest (zero: no loop). */
    NvmePathRepair(NvmeControllers controllers, DeviceWaiter waiter, Duration namespaceAppears, Connector connector,
                   Duration repairInterval, LongSupplier nanoTime) {
        this.controllers = controllers;
        this.waiter = waiter;
        this.namespaceAppears = namespaceAppears;
        this.connector = connector;
        this.failedConnects = new RetryBackoff<>(CONNECT_BACKOFF_FIRST, CONNECT_BACKOFF_MAX, repairInterval, nanoTime);
        this.nanoTime = nanoTime;
        this.hostIds = new ControllerHostIds(controllers);
    }

    @Override
    public boolean mayRepair(AttachRequest request, Attachment attachment) {
        try {
            return needed(attachment);
        } catch (IOException unsure) {
            return true; // the repair itself says what it cannot read
        }
    }

    /** Whether a portal of the volume has no controller and may be tried now: sysfs reads only. */
    boolean needed(Attachment attachment) throws IOException {
        Optional<Reached> reached = Reached.of(attachment.details());
        if (reached.isEmpty()) {
            return false;
        }
        for (ControllerKey key : reached.get().keys()) {
            if (controllers.usable(key).isEmpty() && failedConnects.pending(key).isEmpty()) {
                return true;
            }
        }
        return false;
    }

    /** Why the last connect to {@code key} failed, while it has not succeeded since: for path health. */
    Optional<String> lastFailure(ControllerKey key) {
        return failedConnects.lastFailure(key);
    }

    /**
     * Connects again the controllers of the volume that the kernel deleted after ctrl_loss_tmo; a controller in any
     * other state is left to the kernel, nothing is disconnected. A fenced volume needs no registration per path: an
     * NVMe registrant is a host, and a controller connected with the host ID the volume was staged with is covered by
     * the node's registration the moment it is live (and refused writes if the node was preempted). So a controller
     * counts as restored only once its {@code hostid} is that one; a fenced volume recorded without one (none was
     * configured) is left alone ({@link PathRepair#cannotRegister}).
     */
    @Override
    public RepairedPaths repair(AttachRequest request, Attachment attachment, Optional<FenceKey> fenceKey)
            throws VolumeException {
        Optional<String> hostId = ControllerHostIds.configured(attachment);
        if (fenceKey.isPresent() && hostId.isEmpty()) {
            return PathRepair.cannotRegister(NvmeTcpTransport.NAME);
        }
        String volumeId = request.volumeId();
        Optional<Reached> reached = Reached.of(attachment.details());
        if (reached.isEmpty()) {
            return RepairedPaths.NONE; // an unreadable record: release says so; nothing here to compare with
        }
        NvmeVolumeSpec spec = NvmeVolumeSpec.from(request);
        try {
            List<ControllerKey> lost = new ArrayList<>();
            boolean authenticated = lostOrAuthenticated(reached.get(), lost);
            if (lost.isEmpty()) {
                return RepairedPaths.NONE;
            }
            Optional<String> disk = controllers.diskOf(attachment.number());
            if (disk.isEmpty()) {
                return RepairedPaths.waiting("its namespace's disk " + attachment.device() + " is gone with its last"
                        + " controller; a connect now would make another disk, so nothing is connected until the"
                        + " volume is staged again");
            }
            if (authenticated) {
                return RepairedPaths.waiting("its controllers authenticate with DH-HMAC-CHAP keys from the stage's"
                        + " secrets, which are not kept: the lost controller(s) at " + portals(lost)
                        + " are not connected again without them");
            }
            Tally tally = new Tally();
            for (ControllerKey key : lost) {
                Optional<String> pending = failedConnects.pending(key);
                if (pending.isPresent()) {
                    tally.unreachable.add(key.portal() + ": " + pending.get());
                    continue;
                }
                reconnect(volumeId, key, spec, new Wanted(disk.get(), hostId), tally);
            }
            return tally.result();
        } catch (InterruptedIOException e) {
            Thread.currentThread().interrupt();
            throw VolumeException.internal("volume " + volumeId + ": path repair interrupted", e);
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the NVMe controllers of "
                    + spec.subsystemNqn() + " to repair its paths", e);
        }
    }

    /**
     * Fills {@code lost} with the volume's controllers the kernel deleted; returns whether one that is left
     * authenticates with DH-HMAC-CHAP keys.
     */
    private boolean lostOrAuthenticated(Reached reached, List<ControllerKey> lost) throws IOException {
        boolean authenticated = false;
        for (ControllerKey key : reached.keys()) {
            Optional<NvmeControllers.Controller> controller = controllers.usable(key);
            if (controller.isEmpty()) {
                lost.add(key);
            } else {
                authenticated |= controllers.attribute(controller.get(), DhchapKeys.HOST_KEY)
                        .filter(k -> !k.isEmpty() && !k.equals("none")).isPresent();
            }
        }
        return authenticated;
    }

    /** What the reconnects of one repair came to, path by path. */
    private static final class Tally {
        final List<String> restored = new ArrayList<>();
        final List<String> wrong = new ArrayList<>();
        final List<String> failed = new ArrayList<>();
        final List<String> unreachable = new ArrayList<>();

        RepairedPaths result() {
            if (restored.isEmpty() && wrong.isEmpty() && failed.isEmpty()) {
                // Only portals that refuse the connect: the outage itself, not a repair gone wrong. Their own
                // back-off spaces the connects; the loop's per-volume one on top would keep the path lost for
                // passes after the portal is back.
                return RepairedPaths.waiting("the portal(s) refuse the connect: " + String.join("; ", unreachable));
            }
            List<String> notBack = new ArrayList<>(failed);
            notBack.addAll(unreachable);
            return new RepairedPaths(restored, wrong, notBack);
        }
    }

    /** What a reconnected controller must show: the volume's disk, and the host ID it was staged with if any. */
    private record Wanted(String disk, Optional<String> hostId) {
    }

    private void reconnect(String volumeId, ControllerKey key, NvmeVolumeSpec spec, Wanted want, Tally tally)
            throws IOException, VolumeException {
        String disk = want.disk();
        List<String> restored = tally.restored;
        List<String> wrong = tally.wrong;
        List<String> failed = tally.failed;
        List<String> unreachable = tally.unreachable;
        NvmeControllers.Controller controller;
        long started = nanoTime.getAsLong();
        try {
            controller = connector.connect(volumeId, key, spec, want.hostId());
        } catch (InterruptedIOException e) {
            throw e;
        } catch (IOException e) {
            String why = "the connect failed: " + e.getMessage();
            boolean atOnce = e instanceof FabricsDevice.ConnectionRefused
                    || nanoTime.getAsLong() - started < FAILED_AT_ONCE.toNanos();
            unreachable.add(key.portal() + ": " + (atOnce ? failedConnects.failedAtOnce(key, why)
                    : failedConnects.failed(key, why)));
            PathRepairs.count(NvmeTcpTransport.NAME, PathRepairs.CONTROLLER, PathRepairs.FAILED, 1);
            return;
        }
        NamespaceIdentity wanted = spec.namespace();
        Optional<NvmeControllers.NamespacePath> found;
        try {
            found = Optional.of(waiter.within(namespaceAppears, "namespace " + wanted + " on " + controller.name(),
                    () -> controllers.namespaces(controller).stream().filter(p -> answersFor(wanted, p)).findFirst()));
        } catch (WaitTimeoutException e) {
            found = Optional.empty();
        }
        String name = key.portal() + "=" + controller.name();
        if (found.isEmpty()) {
            failed.add(name + ": " + failedConnects.failed(key, "connected, but the namespace did not appear"
                    + " within " + namespaceAppears.toSeconds() + " s"));
            PathRepairs.count(NvmeTcpTransport.NAME, PathRepairs.CONTROLLER, PathRepairs.FAILED, 1);
        } else if (wanted.mismatch(found.get().reported()).isPresent()) {
            wrong.add(name + " (" + wanted.mismatch(found.get().reported()).get() + ")");
            failedConnects.failed(key, "another namespace answered at the volume's NSID");
            PathRepairs.count(NvmeTcpTransport.NAME, PathRepairs.CONTROLLER, PathRepairs.WRONG_LUN, 1);
        } else if (!found.get().disk().equals(disk)) {
            failed.add(name + ": " + failedConnects.failed(key, "the namespace came back as another disk ("
                    + found.get().disk() + ", not " + disk + "): native NVMe multipath is off"));
            PathRepairs.count(NvmeTcpTransport.NAME, PathRepairs.CONTROLLER, PathRepairs.FAILED, 1);
        } else if (want.hostId().isPresent() && !hostIds.carries(controller, want.hostId().get())) {
            failed.add(name + ": " + failedConnects.failed(key, "connected as host ID "
                    + controllers.attribute(controller, ControllerHostIds.ATTRIBUTE).orElse("(none shown)") + ", not "
                    + want.hostId().get() + " the volume was staged with: another host to its namespace's"
                    + " reservation"));
            PathRepairs.count(NvmeTcpTransport.NAME, PathRepairs.CONTROLLER, PathRepairs.FAILED, 1);
        } else {
            failedConnects.succeeded(key);
            restored.add(name);
            PathRepairs.count(NvmeTcpTransport.NAME, PathRepairs.CONTROLLER, PathRepairs.RESTORED, 1);
        }
    }

    /** NVMe/TCP makes nothing shared that a record would not name: a controller goes with its last volume. */
    @Override
    public OrphanSweep sweepOrphans(OrphanSweep.Recorded recorded) {
        return OrphanSweep.NONE;
    }

    /** The volume's namespace, or another one at its NSID: either ends the wait. */
    private static boolean answersFor(NamespaceIdentity wanted, NvmeControllers.NamespacePath path) {
        return wanted.mismatch(path.reported()).isEmpty()
                || wanted.nsid().isPresent() && path.reported().nsid().equals(wanted.nsid());
    }

    private static String portals(List<ControllerKey> keys) {
        return String.join(", ", keys.stream().map(k -> k.portal().toString()).toList());
    }
}
