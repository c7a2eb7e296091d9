package dev.blocknode.transport.nvme;

import dev.blocknode.metrics.FenceEvents;
import dev.blocknode.nvme.reservation.NvmeCommandException;
import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.nvme.reservation.ReservationStatus;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing.Acquired;
import dev.blocknode.transport.Fencing.Held;
import dev.blocknode.transport.Fencing.Unsupported;
import dev.blocknode.transport.san.PrGenerations;
import dev.blocknode.transport.san.TakeoverRule;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

import static dev.blocknode.transport.nvme.NamespaceRelease.TYPE;

/**
 * A stage's part of fencing a namespace, through its head device: the reservation read, a holder of another tag
 * weighed by the {@link TakeoverRule} SCSI fencing uses, this host registered with the next generation of the
 * node's key, the reservation acquired (type 3, Write Exclusive - Registrants Only) or taken from the holder, and
 * every other registrant preempted: under type 3 a registrant may write, so none may stay. One registration covers
 * every controller this node connected with its host ID, so there is no per-path loop as for a LUN.
 */
final class NamespaceAcquisition {

    private static final Logger LOG = Logger.getLogger(NamespaceAcquisition.class.getName());
    /** Rounds of removing other registrants before the stage goes on with them logged. */
    static final int REMOVAL_ROUNDS = 3;

    private final NvmeReservations reservations;
    private final TakeoverRule takeover;
    private final PrGenerations generations;

    NamespaceAcquisition(NvmeReservations reservations, TakeoverRule takeover, PrGenerations generations) {
        this.reservations = reservations;
        this.takeover = takeover;
        this.generations = generations;
    }

    /**
     * @throws VolumeException FAILED_PRECONDITION naming the holder's key while the rule keeps it; INTERNAL when the
     *                         namespace does not answer
     */
    Acquired acquire(String volumeId, Path head, FenceKey node) throws VolumeException {
        ReservationStatus first;
        try {
            first = reservations.report(head);
        } catch (NvmeCommandException.NotSupported e) {
            return new Unsupported("its namespace does not support reservations (" + e.getMessage() + ")");
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the namespace's reservation through "
                    + head, e);
        }
        Optional<Long> holder = first.holder().map(ReservationStatus.Registrant::key);
        Optional<TakeoverRule.TakeOver> takingOver = Optional.empty();
        if (holder.isPresent() && !node.isOurs(holder.get())) {
            takingOver = Optional.of(mayTakeOver(volumeId, holder.get(), first.keys()));
        }
        FenceKey key = node.withGeneration(nextGeneration(node, first.keys()));
        try {
            // A restarted plugin finds its host still registered with an older generation: replaced, not refused.
            reservations.registerIgnoringExisting(head, key.value());
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": the namespace did not take this node's"
                    + " reservation key " + key + " through " + head, e);
        }
        Optional<String> tookOverFrom = Optional.empty();
        if (takingOver.isPresent()) {
            long victim = holder.get();
            preemptNode(volumeId, head, key, victim, first.keys());
            tookOverFrom = Optional.of(FenceKey.hex(victim));
            LOG.warning("took over volume " + volumeId + " from node key " + FenceKey.hex(victim) + ": not renewed for "
                    + takingOver.get().unchanged().toSeconds() + " s");
            FenceEvents.takeover();
        } else {
            reserve(volumeId, head, key);
        }
        takeover.forget(volumeId);
        removeOthers(volumeId, head, key);
        requireHeld(volumeId, head, key);
        return new Held(key, 1, tookOverFrom);
    }

    /**
     * The last word before the stage formats or mounts: this host holds the reservation with this key. A racer can
     * acquire in the instant the removal of others leaves the reservation free, and a racer in that instant can
     * preempt this host: whichever of the two does not hold it at the end refuses its stage, so two nodes never
     * both stage the namespace.
     */
    private void requireHeld(String volumeId, Path head, FenceKey key) throws VolumeException {
        Optional<Long> holder;
        try {
            holder = reservations.report(head).holder().map(ReservationStatus.Registrant::key);
        } catch (IOException e) {
            unregister(volumeId, head, key);
            throw VolumeException.internal("volume " + volumeId + ": cannot read back the namespace's reservation"
                    + " through " + head + " after acquiring it; this node's registration was taken back", e);
        }
        if (holder.isPresent() && holder.get() == key.value()) {
            return;
        }
        unregister(volumeId, head, key);
        if (holder.isPresent()) {
            throw heldElsewhere(volumeId, holder.get(), "another node acquired it while this one was removing stale"
                    + " registrations; this node's registration was taken back");
        }
        throw VolumeException.precondition("volume " + volumeId + ": this node lost the namespace's reservation while"
                + " acquiring it (another node raced for it); its registration was taken back, try again");
    }

    private TakeoverRule.TakeOver mayTakeOver(String volumeId, long holder, List<Long> keys) throws VolumeException {
        TakeoverRule.Verdict verdict = takeover.observe(volumeId, TakeoverRule.Sighting.of(holder, keys));
        if (verdict instanceof TakeoverRule.TakeOver allowed) {
            return allowed;
        }
        throw heldElsewhere(volumeId, holder, ((TakeoverRule.Wait) verdict).why());
    }

    static VolumeException heldElsewhere(String volumeId, long holder, String rule) {
        return VolumeException.precondition("volume " + volumeId + " is reserved at the storage by another node,"
                + " reservation key " + FenceKey.hex(holder) + " (NVMe reservation, Write Exclusive - Registrants"
                + " Only); " + rule);
    }

    /** A generation past every one of our tag's keys on the namespace, so the new key is no old one. */
    private static int nextGeneration(FenceKey node, List<Long> keys) {
        int highest = keys.stream().filter(node::isOurs).mapToInt(k -> FenceKey.of(k).generation()).max().orElse(0);
        return (highest + 1) & 0xffff;
    }

    /**
     * Acquire. A conflict means someone holds it now: another node that acquired meanwhile (this host's
     * registration is taken back and the stage refused), or our own tag through another host ID (a node whose host
     * ID changed), whose reservation is ours to take with a Preempt of its key.
     */
    private void reserve(String volumeId, Path head, FenceKey key) throws VolumeException {
        try {
            reservations.acquire(head, key.value(), TYPE);
            return;
        } catch (NvmeCommandException.ReservationConflict conflict) {
            // held by another host: the report says whose
        } catch (IOException e) {
            unregister(volumeId, head, key);
            throw VolumeException.internal("volume " + volumeId + ": cannot acquire the namespace's reservation"
                    + " with key " + key, e);
        }
        try {
            Optional<Long> now = reservations.report(head).holder().map(ReservationStatus.Registrant::key);
            if (now.isPresent() && !key.isOurs(now.get())) {
                unregister(volumeId, head, key);
                throw heldElsewhere(volumeId, now.get(), "another node acquired it while this one was registering;"
                        + " this node's registration was taken back");
            }
            if (now.isEmpty()) {
                reservations.acquire(head, key.value(), TYPE);
                return;
            }
            long ours = now.get();
            reservations.preempt(head, key.value(), ours, TYPE, false);
            LOG.info(() -> "volume " + volumeId + ": took back this node's own reservation (key " + FenceKey.hex(ours)
                    + ", held by this node under another host ID)");
        } catch (IOException e) {
            unregister(volumeId, head, key);
            throw VolumeException.internal("volume " + volumeId + ": cannot acquire the namespace's reservation"
                    + " with key " + key, e);
        }
    }

    /**
     * Cuts the old holder off: its other keys first (a renewal's lost reply can leave two), then the holder's, each
     * with Preempt and Abort (its queued commands aborted too), or Preempt where the namespace lacks that. A
     * conflict means the key changed since it was observed: the holder is alive after all, and the stage refused.
     */
    private void preemptNode(String volumeId, Path head, FenceKey key, long holder, List<Long> seen)
            throws VolumeException {
        for (long victim : FenceKey.takeoverVictims(holder, seen)) {
            try {
                try {
                    reservations.preempt(head, key.value(), victim, TYPE, true);
                } catch (NvmeCommandException.NotSupported noAbort) {
                    LOG.warning(() -> "volume " + volumeId + ": the namespace does not support Preempt and Abort;"
                            + " preempting key " + FenceKey.hex(victim) + " without aborting its commands ("
                            + noAbort.getMessage() + ")");
                    reservations.preempt(head, key.value(), victim, TYPE, false);
                }
            } catch (NvmeCommandException.ReservationConflict changed) {
                unregister(volumeId, head, key);
                throw heldElsewhere(volumeId, holder, "its key " + FenceKey.hex(victim) + " changed while this node"
                        + " was taking the volume over, so the holder is alive; this node's registration was taken"
                        + " back");
            } catch (IOException e) {
                unregister(volumeId, head, key);
                throw VolumeException.internal("volume " + volumeId + ": cannot preempt node key "
                        + FenceKey.hex(victim), e);
            }
        }
    }

    /**
     * Every registrant but this host preempted: a racer that lost, a node that died between Register and Acquire,
     * our own tag under another host ID. nvmet takes a Preempt from the holder as a change of type only (its
     * registrants stay), so they are preempted while no one holds the reservation: this host releases it, preempts
     * each, and acquires again (a racer that acquires meanwhile wins, and this stage is refused). A few rounds at
     * most: a registrant that keeps coming back is left, said in the log. The generation read last, after this
     * host's registration, is the floor a target restart would fall below ({@link PrGenerations}).
     */
    private void removeOthers(String volumeId, Path head, FenceKey key) throws VolumeException {
        for (int round = 0; ; round++) {
            ReservationStatus status;
            try {
                status = reservations.report(head);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": cannot read the namespace's registrants to remove others': "
                        + e.getMessage());
                return;
            }
            generations.seen(volumeId, status.generation());
            if (status.holder().filter(h -> h.key() != key.value()).isPresent()) {
                return; // a racer acquired while this host had released: it won, requireHeld refuses this stage
            }
            List<Long> others = status.keys().stream().filter(k -> k != key.value()).distinct().toList();
            if (others.isEmpty()) {
                return;
            }
            if (round == REMOVAL_ROUNDS) {
                LOG.warning(() -> "volume " + volumeId + ": registrations " + others.stream().map(FenceKey::hex)
                        .toList() + " are still on the namespace after " + REMOVAL_ROUNDS + " rounds of removing"
                        + " them; under the reservation they may write");
                return;
            }
            preemptWhileReleased(volumeId, head, key, others);
        }
    }

    private void preemptWhileReleased(String volumeId, Path head, FenceKey key, List<Long> others)
            throws VolumeException {
        try {
            reservations.release(head, key.value(), TYPE);
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot release the reservation to remove other registrants: "
                    + e.getMessage());
            return;
        }
        if (acquiredByAnother(head, key)) {
            // A racer acquired in the gap: preempting its key now would take its fresh reservation over (nvmet moves
            // the reservation to whoever preempts the holder's key). It won; requireHeld refuses this stage.
            return;
        }
        for (long other : others) {
            try {
                reservations.preempt(head, key.value(), other, TYPE, false);
                if (key.isOurs(other)) {
                    LOG.info(() -> "volume " + volumeId + ": removed this node's registration " + FenceKey.hex(other)
                            + " (another host ID of this node)");
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
        reserve(volumeId, head, key);
    }

    private boolean acquiredByAnother(Path head, FenceKey key) {
        try {
            Optional<Long> holder = reservations.report(head).holder().map(ReservationStatus.Registrant::key);
            return holder.isPresent() && holder.get() != key.value();
        } catch (IOException e) {
            return true; // unknown: preempt nothing; requireHeld reads it again and decides
        }
    }

    /** Best effort: a stage refused after registering leaves nothing of this host. */
    private void unregister(String volumeId, Path head, FenceKey key) {
        try {
            reservations.registerIgnoringExisting(head, 0);
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot take back this node's registration " + key + ": "
                    + e.getMessage());
        }
    }
}
