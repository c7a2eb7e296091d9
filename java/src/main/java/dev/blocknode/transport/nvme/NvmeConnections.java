package dev.blocknode.transport.nvme;

import dev.blocknode.metrics.Phases;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.StagedVolumes;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The controllers of NVMe/TCP volumes, connected and deleted: one per portal, shared by every volume of the
 * subsystem behind it, each connect and delete under its key's lock so that two volumes never connect twice to one
 * portal. A controller is deleted only when no other volume's staging record names it and no disk of it is held
 * ({@link ControllerUsers}).
 */
final class NvmeConnections {

    /** Its lines are the transport's, as before it was split out. */
    private static final Logger LOG = Logger.getLogger(NvmeTcpTransport.class.getName());

    private static final Pattern REPLY = Pattern.compile("instance=(\\d+),cntlid=(\\d+)");

    private final NvmeControllers controllers;
    private final ControllerUsers users;
    private final Fabric fabric;
    private final DeviceWaiter waiter;
    private final KeyedLocks<ControllerKey> controllerLocks = new KeyedLocks<>();
    /**
     * Devices detach was called for: unmounted and flushed, so they use no controller any more, though their
     * records stay until detach returns. Without this, two volumes unstaged one after the other would each see
     * the other's record and keep the controllers, and both records would go with the controllers still there.
     * Forgotten when attach hands the device out again; empty after a restart, when the start-up recovery
     * detaches one volume at a time and the last one deletes.
     */
    private final Set<DeviceNumber> released = ConcurrentHashMap.newKeySet();

    NvmeConnections(Host host, NvmeControllers controllers, Fabric fabric, DeviceWaiter waiter,
                    StagedVolumes staged) {
        this.controllers = controllers;
        this.fabric = fabric;
        this.waiter = waiter;
        this.users = new ControllerUsers(staged, host.blockDevices(), host.paths(), controllers, fabric.hostConfig());
    }

    /** The live controller for {@code key}, connecting one when there is none, under the key's lock. */
    NvmeControllers.Controller connect(String volumeId, ControllerKey key, HostIdentity identity,
                                       Optional<DhchapKeys> keys) throws IOException {
        try (KeyedLocks.Held ignored = controllerLocks.lock(key)) {
            return ensureController(volumeId, key, identity, keys);
        }
    }

    /** The device is handed out (again): its controllers count as used by it. */
    void handedOut(DeviceNumber device) {
        released.remove(device);
    }

    /** Detach was called for the device: it uses no controller any more, though its record stays until detach ends. */
    void releasing(DeviceNumber device) {
        released.add(device);
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
        String reply = Phases.time("connect", () -> fabric.device().connect(options, fabric.timeouts().connect()));
        Matcher answer = REPLY.matcher(reply);
        if (!answer.find()) {
            throw new IOException("/dev/nvme-fabrics answered \"" + reply + "\", not instance=N,cntlid=M");
        }
        String name = "nvme" + answer.group(1);
        LOG.info(() -> "volume " + volumeId + ": connected to " + key + " as " + name);
        return waiter.within(fabric.timeouts().connect(), "controller " + name + " of " + key + " in sysfs",
                () -> controllers.named(name).filter(c -> c.serves(key)));
    }


    /**
     * The repair's connect of a controller the kernel deleted: the stage's own, as the host the stage connected as
     * (the record's host NQN and, where recorded, host ID; a node whose host NQN or ID changed since is not passed
     * off as it: under a reservation another host ID is another, unregistered host), without keys (a volume with
     * keys is not reconnected, see {@link NvmePathRepair}).
     */
    NvmeControllers.Controller reconnect(String volumeId, ControllerKey key, NvmeVolumeSpec spec,
                                         Optional<String> stagedHostId) throws IOException, VolumeException {
        HostIdentity identity = hostIdentity(spec);
        if (!identity.hostNqn().equals(key.hostNqn())) {
            throw new IOException("this node's NVMe host NQN is no longer the one the volume was staged as");
        }
        if (stagedHostId.isPresent() && !identity.hostId().equals(stagedHostId)) {
            throw new IOException("this node's NVMe host ID is no longer " + stagedHostId.get() + ", the one the"
                    + " volume was staged with");
        }
        return connect(volumeId, key, identity, Optional.empty());
    }

    /**
     * Refuses keys the controllers did not authenticate with: a kernel without DH-HMAC-CHAP (no dhchap_secret
     * attribute) accepts the option and connects unauthenticated, and a controller another volume connected
     * may have been made without keys or with others. Never a volume that looks authenticated and is not.
     */
    void requireAuthenticated(String volumeId, List<NvmeControllers.Controller> reaching, DhchapKeys keys)
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

    /** Best effort after a refusal: the refusal is what the caller gets; a failed undo is added to it. */
    void undo(String volumeId, Reached reached, Predicate<StagedVolumes.StagedVolume> self,
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
    List<String> release(Reached reached, Predicate<StagedVolumes.StagedVolume> self) {
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
                    Phases.run("disconnect", () -> fabric.writer().write(controllers.attributePath(controller,
                            "delete_controller"), "1"));
                } catch (NoSuchFileException gone) {
                    continue; // deleted meanwhile by the kernel (ctrl_loss_tmo) or by hand
                }
            }
            waiter.within(fabric.timeouts().controllerGoes(), "controller " + controller.name() + " of " + key
                    + " to be deleted", () -> controllers.named(controller.name())
                    .filter(c -> c.serves(key)).isPresent() ? Optional.empty() : Optional.of(true));
            LOG.info(() -> "deleted controller " + controller.name() + " of " + key);
        }
    }

    HostIdentity hostIdentity(NvmeVolumeSpec spec) throws VolumeException {
        try {
            return spec.host(HostIdentity.configured(fabric.hostConfig()));
        } catch (IOException e) {
            throw VolumeException.internal("cannot read this node's NVMe host identity in " + fabric.hostConfig(), e);
        }
    }
}
