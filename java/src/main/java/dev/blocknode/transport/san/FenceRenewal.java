package dev.blocknode.transport.san;

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
import java.util.logging.Logger;

/**
 * The proof of life: every path re-registered with the next generation of this node's key, and the paths that
 * refuse it settled by what the reservation says (this node fenced out, or a path of ours to bring back).
 */
final class FenceRenewal {

    private static final Logger LOG = Logger.getLogger(LunFencing.class.getName()); // the protocol's one source

    private final PersistentReservations pr;
    private final LunPaths lunPaths;

    FenceRenewal(PersistentReservations pr, LunPaths lunPaths) {
        this.pr = pr;
        this.lunPaths = lunPaths;
    }

    Renewal renew(String volumeId, Attachment attachment, FenceKey current) {
        List<LunPath> paths;
        try {
            paths = lunPaths.of(attachment);
        } catch (IOException e) {
            return new Unreachable("cannot list the LUN's paths: " + e.getMessage());
        }
        FenceKey next = current.next();
        int renewed = 0;
        List<LunPath> conflicting = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (LunPath path : paths) {
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
    private Renewal settleConflicts(String volumeId, List<LunPath> paths, List<LunPath> conflicting, FenceKey next,
                                    boolean renewedThisRound) {
        LunPaths.Answer answer;
        try {
            answer = lunPaths.read(paths);
        } catch (IOException e) {
            return new Unreachable("a path refused the renewal and the reservation cannot be read: " + e.getMessage());
        }
        Optional<Reservation.Held> held = answer.reservation().held();
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
