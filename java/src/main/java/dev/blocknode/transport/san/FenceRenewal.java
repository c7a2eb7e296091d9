package dev.blocknode.transport.san;

import dev.blocknode.metrics.FenceEvents;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.scsi.reservation.Reservation;
import dev.blocknode.scsi.reservation.ScsiCommandException;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing.FencedOut;
import dev.blocknode.transport.Fencing.Renewal;
import dev.blocknode.transport.Fencing.Renewed;
import dev.blocknode.transport.Fencing.Unreachable;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.logging.Logger;

/**
 * The proof of life: every path re-registered with the next generation of this node's key, and the paths that
 * refuse it settled by what the reservation says (this node fenced out, or a path of ours to bring back).
 */
final class FenceRenewal {

    private static final Logger LOG = Logger.getLogger(LunFencing.class.getName()); // the protocol's one source

    private final PersistentReservations pr;
    private final LunPaths lunPaths;
    private final PrGenerations generations;

    FenceRenewal(PersistentReservations pr, LunPaths lunPaths, PrGenerations generations) {
        this.pr = pr;
        this.lunPaths = lunPaths;
        this.generations = generations;
    }

    Renewal renew(String volumeId, Attachment attachment, FenceKey current) {
        List<LunPath> paths;
        try {
            paths = lunPaths.of(attachment);
        } catch (IOException e) {
            return new Unreachable("cannot list the LUN's paths: " + e.getMessage());
        }
        FenceKey next = current.next();
        List<LunPath> renewed = new ArrayList<>();
        List<LunPath> conflicting = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (LunPath path : paths) {
            try {
                pr.register(path, current.value(), next.value());
                renewed.add(path);
            } catch (ScsiCommandException.ReservationConflict conflict) {
                conflicting.add(path);
            } catch (IOException e) {
                failures.add(path + ": " + e.getMessage());
            }
        }
        if (!renewed.isEmpty() && generations.floor(volumeId).isEmpty()) {
            learnGeneration(volumeId, renewed.get(0)); // the first round after a plugin start
        }
        if (conflicting.isEmpty()) {
            return !renewed.isEmpty() ? new Renewed(next)
                    : new Unreachable("no path answered: " + String.join("; ", failures));
        }
        return settleConflicts(volumeId, paths, conflicting, next, !renewed.isEmpty());
    }

    /** Reads the LUN's PRgeneration after this node's own registration raised it: see {@link PrGenerations}. */
    private void learnGeneration(String volumeId, LunPath path) {
        try {
            generations.seen(volumeId, pr.readKeys(path).generation());
        } catch (IOException e) {
            LOG.fine(() -> "volume " + volumeId + ": cannot read the LUN's PRgeneration yet: " + e.getMessage());
        }
    }

    /**
     * Some paths refused the renewal: a nexus preempted by another node refuses every REGISTER with a key, so a
     * node cut off cannot register itself back by renewing. The reservation says which: held by another tag, this
     * node is fenced out (its remaining registrations are dropped too); held by ours, the refusing path was at
     * another generation (a lost reply) or never registered (a path that came back): it is re-registered, the
     * latter only when another path renewed in this same round, which proves this node still held the LUN
     * moments ago (a takeover needs the keys to stand still for three rounds).
     */
    private Renewal settleConflicts(String volumeId, List<LunPath> paths, List<LunPath> conflicting, FenceKey next,
                                    boolean renewedThisRound) {
        LunPaths.Answer answer;
        try {
            answer = lunPaths.read(paths);
        } catch (IOException e) {
            return new Unreachable("a path refused the renewal and the reservation cannot be read: " + e.getMessage());
        }
        Optional<Reservation.Held> held = answer.reservation().held();
        OptionalLong floor = generations.floor(volumeId);
        if (held.isEmpty() && answer.keys().keys().isEmpty() && floor.isPresent()
                && answer.keys().generation() < floor.getAsLong()) {
            return reserveAgain(volumeId, paths, next, floor.getAsLong(), answer.keys().generation());
        }
        if (held.isEmpty() || !next.isOurs(held.get().key())) {
            lunPaths.unregister(volumeId, paths);
            return new FencedOut(held.map(Reservation.Held::key), held.isPresent()
                    ? "the LUN is reserved by node key " + FenceKey.hex(held.get().key()) + " and this node's"
                    + " registrations were preempted"
                    : "the LUN's reservation is gone and this node's registrations were preempted");
        }
        List<Long> ours = answer.keys().keys().stream().filter(next::isOurs).distinct().toList();
        for (LunPath path : conflicting) {
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

    /**
     * The LUN has no registration and no reservation left, and its PRgeneration went back below what this node saw
     * after registering: the target restarted without persisting them (APTPL off, or not supported). Another node
     * that took the LUN since would hold the reservation or have raised the generation past the floor, so this node
     * is the holder still, and registers every path and reserves again, as its stage did. If another node reserves
     * first, this node takes its registrations back and is fenced out.
     */
    private Renewal reserveAgain(String volumeId, List<LunPath> paths, FenceKey next, long floor, long now) {
        LOG.warning(() -> "volume " + volumeId + ": the target forgot every registration and the reservation (its"
                + " PRgeneration went back from at least " + floor + " to " + now + ": restarted without persisting"
                + " them); registering and reserving again");
        List<LunPath> registered = lunPaths.register(volumeId, paths, next);
        String failure = "no path took this node's key again";
        for (LunPath path : registered) {
            try {
                pr.reserve(path, next.value(), LunFencing.TYPE);
                generations.forget(volumeId); // the floor went back with the target: read it afresh
                learnGeneration(volumeId, path);
                FenceEvents.reservedAgain();
                return new Renewed(next);
            } catch (ScsiCommandException.ReservationConflict conflict) {
                failure = "another node reserved the LUN first";
                break;
            } catch (IOException e) {
                failure = "RESERVE failed: " + e.getMessage();
            }
        }
        lunPaths.unregister(volumeId, paths); // registered without the reservation, this node must not stay
        return new FencedOut(Optional.empty(), "the target forgot the LUN's reservation and this node could not"
                + " take it again (" + failure + "); this node's registrations were taken back");
    }

    /** REGISTER from each of our tag's other keys to {@code next}: true when one was this path's. */
    private boolean reregister(LunPath path, List<Long> ours, FenceKey next) {
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
}
