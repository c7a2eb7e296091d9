package dev.blocknode.transport.san;

import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.scsi.reservation.Reservation;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;

import java.io.IOException;
import java.util.List;
import java.util.logging.Logger;

import static dev.blocknode.transport.san.LunFencing.TYPE;

/**
 * An unstage's part of the protocol: every path that answers unregistered, and what this node's tag still has on
 * the LUN through paths that did not (registrations, the reservation itself) cleared through one that did.
 */
final class FenceRelease {

    private static final Logger LOG = Logger.getLogger(LunFencing.class.getName()); // the protocol's one source

    private final PersistentReservations pr;
    private final LunPaths lunPaths;
    private final PrGenerations generations;

    FenceRelease(PersistentReservations pr, LunPaths lunPaths, PrGenerations generations) {
        this.pr = pr;
        this.lunPaths = lunPaths;
        this.generations = generations;
    }

    void release(String volumeId, Attachment attachment, FenceKey node) {
        // The takeover observation stays: a refused stage's undo releases too, and its retry must find it.
        generations.forget(volumeId);
        List<LunPath> paths;
        try {
            paths = lunPaths.of(attachment);
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot list the LUN's paths to release its reservation: "
                    + e.getMessage());
            return;
        }
        List<LunPath> live = lunPaths.unregister(volumeId, paths);
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
    private void clearUnreachable(String volumeId, LunPath live, FenceKey node) {
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

    private static List<String> hex(List<Long> keys) {
        return keys.stream().map(FenceKey::hex).toList();
    }
}
