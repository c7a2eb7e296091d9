package dev.blocknode.transport.san;

import dev.blocknode.metrics.FenceEvents;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.reservation.Capabilities;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.scsi.reservation.PrType;
import dev.blocknode.scsi.reservation.RegisteredKeys;
import dev.blocknode.scsi.reservation.Reservation;
import dev.blocknode.scsi.reservation.ScsiCommandException;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The fencing protocol on a SCSI LUN, across its paths: every path device is one I_T nexus, and a registration
 * belongs to the nexus it was made through (through a multipath map SG_IO would reach one path only), so each
 * path registers for itself and one reserves, with type 5, Write Exclusive - Registrants Only: only registered
 * nexuses may write, everyone may read. See {@link TakeoverRule} for when a held LUN may be taken.
 */
public final class LunFencing implements Fencing {

    private static final Logger LOG = Logger.getLogger(LunFencing.class.getName());
    static final PrType TYPE = PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY;

    /** The path devices of an attached LUN present now: each one I_T nexus. */
    @FunctionalInterface
    public interface PathDevices {
        List<Path> of(Attachment attachment) throws IOException;
    }

    private final PersistentReservations pr;
    private final PathDevices pathDevices;
    private final TakeoverRule takeover;

    public LunFencing(PersistentReservations pr, PathDevices pathDevices, TakeoverRule takeover) {
        this.pr = pr;
        this.pathDevices = pathDevices;
        this.takeover = takeover;
    }

    @Override
    public Acquired acquire(String volumeId, Attachment attachment, FenceKey node) throws VolumeException {
        List<Path> paths = paths(volumeId, attachment);
        Answer first;
        try {
            first = read(paths);
        } catch (ScsiCommandException.NotSupported e) {
            return new Unsupported("its LUN does not support persistent reservations (" + e.getMessage() + ")");
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the LUN's reservation through any of "
                    + paths, e);
        }
        Optional<Reservation.Held> held = first.reservation().held();
        Optional<String> cannotFence = knownQuirk(first.path()).or(() -> lacksType5(first.path()));
        if (cannotFence.isPresent()) {
            if (held.isPresent() && !node.isOurs(held.get().key())) {
                throw heldElsewhere(volumeId, held.get().key(), "this node cannot take it over: " + cannotFence.get());
            }
            return new Unsupported(cannotFence.get());
        }
        Optional<TakeoverRule.TakeOver> takingOver = Optional.empty();
        if (held.isPresent() && !node.isOurs(held.get().key())) {
            takingOver = Optional.of(mayTakeOver(volumeId, held.get(), first.keys()));
        }
        FenceKey key = node.withGeneration(nextGeneration(node, first.keys()));
        List<Path> registered = registerAll(volumeId, paths, key);
        if (registered.isEmpty()) {
            throw VolumeException.internal("volume " + volumeId + ": no path of the LUN took this node's reservation"
                    + " key " + key + " (" + paths + ")", null);
        }
        Optional<String> tookOverFrom = Optional.empty();
        if (takingOver.isPresent()) {
            long victim = held.get().key();
            preemptNode(volumeId, paths, registered.get(0), key, victim, first.keys());
            tookOverFrom = Optional.of(FenceKey.hex(victim));
            LOG.warning("took over volume " + volumeId + " from node key " + FenceKey.hex(victim) + ": not renewed for "
                    + takingOver.get().unchanged().toSeconds() + " s");
            FenceEvents.takeover();
        } else {
            reserve(volumeId, paths, registered, key);
        }
        takeover.forget(volumeId);
        removeOthers(volumeId, registered.get(0), key);
        return new Held(key, registered.size(), tookOverFrom);
    }

    /** Refuses (FAILED_PRECONDITION) unless the rule lets this stage take the LUN from its holder now. */
    private TakeoverRule.TakeOver mayTakeOver(String volumeId, Reservation.Held held, RegisteredKeys keys)
            throws VolumeException {
        TakeoverRule.Verdict verdict = takeover.observe(volumeId, TakeoverRule.Sighting.of(held.key(), keys.keys()));
        if (verdict instanceof TakeoverRule.TakeOver allowed) {
            return allowed;
        }
        throw heldElsewhere(volumeId, held.key(), ((TakeoverRule.Wait) verdict).why());
    }

    private static VolumeException heldElsewhere(String volumeId, long holder, String rule) {
        return VolumeException.precondition("volume " + volumeId + " is reserved at the storage by another node,"
                + " reservation key " + FenceKey.hex(holder) + " (SCSI-3 persistent reservation, type 5); " + rule);
    }

    /** A generation past every one of our tag's keys on the target, so the new key is no old one. */
    private static int nextGeneration(FenceKey node, RegisteredKeys keys) {
        int highest = keys.keys().stream().filter(node::isOurs).mapToInt(k -> FenceKey.of(k).generation()).max()
                .orElse(0);
        return (highest + 1) & 0xffff;
    }

    /** REGISTER AND IGNORE EXISTING KEY on every path: each path's nexus now has {@code key}. */
    private List<Path> registerAll(String volumeId, List<Path> paths, FenceKey key) {
        List<Path> registered = new ArrayList<>();
        for (Path path : paths) {
            try {
                pr.registerIgnoringExisting(path, key.value());
                registered.add(path);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": path " + path + " did not register key " + key
                        + " (it will be tried at the next renewal): " + e.getMessage());
            }
        }
        return registered;
    }

    /**
     * RESERVE through a registered path; the holder's own path answers GOOD too. If every path conflicts, the
     * holder is another node that reserved meanwhile (its registrations are dropped here and the stage refused),
     * or one of our own nexuses we cannot reach any more (an old session, a dead path): that one is ours to take
     * back with a PREEMPT of its key.
     */
    private void reserve(String volumeId, List<Path> paths, List<Path> registered, FenceKey key)
            throws VolumeException {
        for (Path path : registered) {
            try {
                pr.reserve(path, key.value(), TYPE);
                return;
            } catch (ScsiCommandException.ReservationConflict conflict) {
                // held through another nexus: try the next path, then look
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": RESERVE through " + path + " failed: " + e.getMessage());
            }
        }
        Reservation now;
        try {
            now = pr.readReservation(registered.get(0));
        } catch (IOException e) {
            unregister(volumeId, paths);
            throw VolumeException.internal("volume " + volumeId + ": the LUN could not be reserved, nor its holder read",
                    e);
        }
        if (now.held().isPresent() && !key.isOurs(now.held().get().key())) {
            unregister(volumeId, paths);
            throw heldElsewhere(volumeId, now.held().get().key(), "another node reserved it while this one was"
                    + " registering; this node's registrations were taken back");
        }
        long ours = now.held().map(Reservation.Held::key).orElse(0L);
        try {
            if (ours == 0) {
                pr.reserve(registered.get(0), key.value(), TYPE);
            } else {
                // Our key is of a newer generation than any of ours there, so this removes only the old nexus.
                pr.preempt(registered.get(0), key.value(), ours, TYPE, false);
                LOG.info(() -> "volume " + volumeId + ": took back this node's own reservation (key "
                        + FenceKey.hex(ours) + ", held through a nexus not used any more)");
            }
        } catch (IOException e) {
            unregister(volumeId, paths);
            throw VolumeException.internal("volume " + volumeId + ": cannot reserve the LUN with key " + key, e);
        }
    }

    /**
     * Cuts the old holder off: first its registrations that do not hold the reservation (under type 5 they could
     * write; a renewal cut half-way leaves two generations), then the holder itself, each with PREEMPT AND ABORT
     * (its queued commands are aborted too), or PREEMPT where the target lacks that. A conflict means the key
     * changed since it was observed: the holder is alive after all, and the stage is refused.
     */
    private void preemptNode(String volumeId, List<Path> paths, Path path, FenceKey key, long holder,
                             RegisteredKeys seen) throws VolumeException {
        List<Long> victims = new ArrayList<>(seen.keys().stream()
                .filter(k -> FenceKey.tagOf(k) == FenceKey.tagOf(holder) && k != holder).distinct().toList());
        victims.add(holder);
        for (long victim : victims) {
            try {
                try {
                    pr.preempt(path, key.value(), victim, TYPE, true);
                } catch (ScsiCommandException.NotSupported noAbort) {
                    LOG.warning(() -> "volume " + volumeId + ": the target does not support PREEMPT AND ABORT;"
                            + " preempting key " + FenceKey.hex(victim) + " without aborting its queued commands ("
                            + noAbort.getMessage() + ")");
                    pr.preempt(path, key.value(), victim, TYPE, false);
                }
            } catch (ScsiCommandException.ReservationConflict changed) {
                unregister(volumeId, paths);
                throw heldElsewhere(volumeId, holder, "its key " + FenceKey.hex(victim) + " changed while this node"
                        + " was taking the volume over, so the holder is alive; this node's registrations were taken"
                        + " back");
            } catch (IOException e) {
                unregister(volumeId, paths);
                throw VolumeException.internal("volume " + volumeId + ": cannot preempt node key "
                        + FenceKey.hex(victim), e);
            }
        }
    }

    /**
     * Under type 5 every registrant may write: registrations of other tags that do not hold the reservation (a
     * node that raced this stage and lost, one that died between registering and reserving) are preempted, and so
     * are our own of other generations (nexuses we no longer use).
     */
    private void removeOthers(String volumeId, Path path, FenceKey key) {
        RegisteredKeys keys;
        try {
            keys = pr.readKeys(path);
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot read the LUN's registrations to remove others': "
                    + e.getMessage());
            return;
        }
        for (long other : keys.keys().stream().distinct().toList()) {
            if (other == key.value()) {
                continue;
            }
            try {
                pr.preempt(path, key.value(), other, TYPE, false);
                if (key.isOurs(other)) {
                    LOG.info(() -> "volume " + volumeId + ": removed this node's old registration " + FenceKey.hex(other));
                } else {
                    LOG.warning(() -> "volume " + volumeId + ": removed the registration of another node, key "
                            + FenceKey.hex(other) + ", which did not hold the reservation");
                    FenceEvents.foreignRemoved();
                }
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": cannot remove registration " + FenceKey.hex(other) + ": "
                        + e.getMessage());
            }
        }
    }

    @Override
    public Renewal renew(String volumeId, Attachment attachment, FenceKey current) {
        List<Path> paths;
        try {
            paths = pathDevices.of(attachment);
        } catch (IOException e) {
            return new Unreachable("cannot list the LUN's paths: " + e.getMessage());
        }
        FenceKey next = current.next();
        int renewed = 0;
        List<Path> conflicting = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (Path path : paths) {
            try {
                pr.register(path, current.value(), next.value());
                renewed++;
            } catch (ScsiCommandException.ReservationConflict conflict) {
                conflicting.add(path);
            } catch (IOException e) {
                failures.add(path + ": " + e.getMessage());
            }
        }
        if (conflicting.isEmpty()) {
            return renewed > 0 ? new Renewed(next)
                    : new Unreachable("no path answered: " + String.join("; ", failures));
        }
        return settleConflicts(volumeId, paths, conflicting, next, renewed > 0);
    }

    /**
     * Some paths refused the renewal: a nexus preempted by another node refuses every REGISTER with a key, so a
     * node cut off cannot register itself back by renewing. The reservation says which: held by another tag, this
     * node is fenced out (its remaining registrations are dropped too); held by ours, the refusing path was at
     * another generation (a lost reply) or never registered (a path that came back): it is re-registered, the
     * latter only when another path renewed in this same round, which proves this node still held the LUN
     * moments ago (a takeover needs the keys to stand still for three rounds).
     */
    private Renewal settleConflicts(String volumeId, List<Path> paths, List<Path> conflicting, FenceKey next,
                                    boolean renewedThisRound) {
        Answer answer;
        try {
            answer = read(paths);
        } catch (IOException e) {
            return new Unreachable("a path refused the renewal and the reservation cannot be read: " + e.getMessage());
        }
        Optional<Reservation.Held> held = answer.reservation().held();
        if (held.isEmpty() || !next.isOurs(held.get().key())) {
            unregister(volumeId, paths);
            return new FencedOut(held.map(Reservation.Held::key), held.isPresent()
                    ? "the LUN is reserved by node key " + FenceKey.hex(held.get().key()) + " and this node's"
                    + " registrations were preempted"
                    : "the LUN's reservation is gone and this node's registrations were preempted");
        }
        List<Long> ours = answer.keys().keys().stream().filter(next::isOurs).distinct().toList();
        for (Path path : conflicting) {
            if (!reregister(path, ours, next) && renewedThisRound) {
                try {
                    pr.registerIgnoringExisting(path, next.value());
                    LOG.info(() -> "volume " + volumeId + ": registered path " + path + " (it had no registration)");
                } catch (IOException e) {
                    LOG.warning(() -> "volume " + volumeId + ": cannot register path " + path + ": " + e.getMessage());
                }
            }
        }
        return new Renewed(next);
    }

    /** REGISTER from each of our tag's other keys to {@code next}: true when one was this path's. */
    private boolean reregister(Path path, List<Long> ours, FenceKey next) {
        for (long old : ours) {
            if (old == next.value()) {
                continue;
            }
            try {
                pr.register(path, old, next.value());
                return true;
            } catch (IOException notThisOne) {
                // a conflict: this path is not at that generation
            }
        }
        return false;
    }

    @Override
    public void release(String volumeId, Attachment attachment, FenceKey node) {
        // The takeover observation stays: a refused stage's undo releases too, and its retry must find it.
        List<Path> paths;
        try {
            paths = pathDevices.of(attachment);
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot list the LUN's paths to release its reservation: "
                    + e.getMessage());
            return;
        }
        List<Path> live = unregister(volumeId, paths);
        if (live.isEmpty()) {
            LOG.warning(() -> "volume " + volumeId + ": no path of " + paths + " answered; this node's reservation key"
                    + " (tag " + node.tagHex() + ") may be left on the LUN, where the takeover rule lets another node"
                    + " take it");
            return;
        }
        clearUnreachable(volumeId, live.get(0), node);
    }

    /**
     * Our tag may still hold the reservation or be registered through a nexus that did not answer (a dead path, an
     * old session): through a live path, register a key of ours, preempt those, release, unregister.
     */
    private void clearUnreachable(String volumeId, Path live, FenceKey node) {
        try {
            Reservation reservation = pr.readReservation(live);
            List<Long> ours = pr.readKeys(live).keys().stream().filter(node::isOurs).distinct().toList();
            boolean holding = reservation.held().map(h -> node.isOurs(h.key())).orElse(false);
            if (ours.isEmpty() && !holding) {
                return;
            }
            FenceKey sweeper = node.withGeneration(0xffff);
            pr.registerIgnoringExisting(live, sweeper.value());
            for (long old : ours) {
                if (old != sweeper.value()) {
                    pr.preempt(live, sweeper.value(), old, TYPE, false);
                }
            }
            if (holding) {
                pr.release(live, sweeper.value(), TYPE);
            }
            pr.registerIgnoringExisting(live, 0);
            LOG.info(() -> "volume " + volumeId + ": cleared this node's registrations " + hex(ours)
                    + (holding ? " and its reservation" : "") + " left through paths that did not answer");
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot clear this node's remaining registrations through " + live
                    + ": " + e.getMessage());
        }
    }

    /** Unregisters every path that answers (REGISTER AND IGNORE EXISTING KEY with 0); returns those. */
    private List<Path> unregister(String volumeId, List<Path> paths) {
        List<Path> answered = new ArrayList<>();
        for (Path path : paths) {
            try {
                pr.registerIgnoringExisting(path, 0);
                answered.add(path);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": cannot unregister path " + path + ": " + e.getMessage());
            }
        }
        return answered;
    }

    /** A target whose way of keeping reservations makes fencing harmful (see {@link ReservationQuirks}). */
    private Optional<String> knownQuirk(Path path) {
        try {
            return ReservationQuirks.whyNotFenced(pr.inquiry(path));
        } catch (IOException | IllegalArgumentException unknown) {
            return Optional.empty(); // every target answers INQUIRY; one that does not is no known quirk
        }
    }

    /** REPORT CAPABILITIES' word on type 5; a target that does not implement the command is taken at RESERVE. */
    private Optional<String> lacksType5(Path path) {
        try {
            Capabilities capabilities = pr.reportCapabilities(path);
            return capabilities.supports(TYPE) ? Optional.empty()
                    : Optional.of("its LUN does not support reservation type 5 (Write Exclusive - Registrants Only);"
                    + " it lists " + capabilities.types());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private record Answer(Path path, Reservation reservation, RegisteredKeys keys) {
    }

    /** The reservation and registrations, through the first path that answers. */
    private Answer read(List<Path> paths) throws IOException {
        IOException last = null;
        for (Path path : paths) {
            try {
                return new Answer(path, pr.readReservation(path), pr.readKeys(path));
            } catch (ScsiCommandException.NotSupported e) {
                throw e;
            } catch (IOException e) {
                last = e;
            }
        }
        throw last != null ? last : new IOException("the LUN has no path");
    }

    private List<Path> paths(String volumeId, Attachment attachment) throws VolumeException {
        try {
            List<Path> paths = pathDevices.of(attachment);
            if (paths.isEmpty()) {
                throw VolumeException.internal("volume " + volumeId + ": the LUN has no path device to reserve it"
                        + " through", null);
            }
            return paths;
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot list the LUN's path devices", e);
        }
    }

    private static List<String> hex(List<Long> keys) {
        return keys.stream().map(FenceKey::hex).toList();
    }
}
