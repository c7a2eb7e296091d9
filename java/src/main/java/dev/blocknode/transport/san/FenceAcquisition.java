package dev.blocknode.transport.san;

import dev.blocknode.metrics.FenceEvents;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.scsi.reservation.RegisteredKeys;
import dev.blocknode.scsi.reservation.Reservation;
import dev.blocknode.scsi.reservation.ScsiCommandException;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing.Acquired;
import dev.blocknode.transport.Fencing.Held;
import dev.blocknode.transport.Fencing.Unsupported;

import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

import static dev.blocknode.transport.san.LunFencing.TYPE;

/**
 * A stage's part of the protocol: the LUN checked for what fencing needs, the holder's key weighed by the
 * {@link TakeoverRule}, this node's key registered on every path, the LUN reserved (or its holder preempted),
 * and every other registration removed.
 */
final class FenceAcquisition {

    private static final Logger LOG = Logger.getLogger(LunFencing.class.getName()); // the protocol's one source

    private final PersistentReservations pr;
    private final LunPaths lunPaths;
    private final FenceCapability capability;
    private final TakeoverRule takeover;
    private final PrGenerations generations;

    FenceAcquisition(PersistentReservations pr, LunPaths lunPaths, TakeoverRule takeover,
                     PrGenerations generations) {
        this.pr = pr;
        this.lunPaths = lunPaths;
        this.capability = new FenceCapability(pr);
        this.takeover = takeover;
        this.generations = generations;
    }

    Acquired acquire(String volumeId, Attachment attachment, FenceKey node) throws VolumeException {
        List<LunPath> paths = lunPaths.toReserve(volumeId, attachment);
        LunPaths.Answer first;
        try {
            first = lunPaths.read(paths);
        } catch (ScsiCommandException.NotSupported e) {
            return new Unsupported("its LUN does not support persistent reservations (" + e.getMessage() + ")");
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the LUN's reservation through any of "
                    + paths, e);
        }
        Optional<Reservation.Held> held = first.reservation().held();
        Optional<String> cannotFence = capability.whyNot(first.path());
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
        List<LunPath> registered = lunPaths.register(volumeId, paths, key);
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

    /**
     * RESERVE through a registered path; the holder's own path answers GOOD too. If every path conflicts, the
     * holder is another node that reserved meanwhile (its registrations are dropped here and the stage refused),
     * or one of our own nexuses we cannot reach any more (an old session, a dead path): that one is ours to take
     * back with a PREEMPT of its key.
     */
    private void reserve(String volumeId, List<LunPath> paths, List<LunPath> registered, FenceKey key)
            throws VolumeException {
        for (LunPath path : registered) {
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
            lunPaths.unregister(volumeId, paths);
            throw VolumeException.internal("volume " + volumeId + ": the LUN could not be reserved, nor its holder read",
                    e);
        }
        if (now.held().isPresent() && !key.isOurs(now.held().get().key())) {
            lunPaths.unregister(volumeId, paths);
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
            lunPaths.unregister(volumeId, paths);
            throw VolumeException.internal("volume " + volumeId + ": cannot reserve the LUN with key " + key, e);
        }
    }

    /**
     * Cuts the old holder off: first its registrations that do not hold the reservation (under type 5 they could
     * write; a renewal cut half-way leaves two generations), then the holder itself, each with PREEMPT AND ABORT
     * (its queued commands are aborted too), or PREEMPT where the target lacks that. A conflict means the key
     * changed since it was observed: the holder is alive after all, and the stage is refused.
     */
    private void preemptNode(String volumeId, List<LunPath> paths, LunPath path, FenceKey key, long holder,
                             RegisteredKeys seen) throws VolumeException {
        for (long victim : FenceKey.takeoverVictims(holder, seen.keys())) {
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
                lunPaths.unregister(volumeId, paths);
                throw heldElsewhere(volumeId, holder, "its key " + FenceKey.hex(victim) + " changed while this node"
                        + " was taking the volume over, so the holder is alive; this node's registrations were taken"
                        + " back");
            } catch (IOException e) {
                lunPaths.unregister(volumeId, paths);
                throw VolumeException.internal("volume " + volumeId + ": cannot preempt node key "
                        + FenceKey.hex(victim), e);
            }
        }
    }

    /**
     * Under type 5 every registrant may write: registrations of other tags that do not hold the reservation (a
     * node that raced this stage and lost, one that died between registering and reserving) are preempted, and so
     * are our own of other generations (nexuses we no longer use). The PRgeneration read here, after this node's
     * registrations, is the floor a target restart would fall below ({@link PrGenerations}).
     */
    private void removeOthers(String volumeId, LunPath path, FenceKey key) {
        RegisteredKeys keys;
        try {
            keys = pr.readKeys(path);
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot read the LUN's registrations to remove others': "
                    + e.getMessage());
            return;
        }
        generations.seen(volumeId, keys.generation()); // past our own registrations: a restart sets it below
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
}
