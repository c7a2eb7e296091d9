package dev.blocknode.transport.nvme;

import dev.blocknode.metrics.FenceEvents;
import dev.blocknode.nvme.reservation.NvmeCommandException;
import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.nvme.reservation.ReservationStatus;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing.FencedOut;
import dev.blocknode.transport.Fencing.Renewal;
import dev.blocknode.transport.Fencing.Renewed;
import dev.blocknode.transport.Fencing.Unreachable;
import dev.blocknode.transport.san.PrGenerations;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.logging.Logger;

/**
 * The proof of life of a fenced NVMe namespace: this host's key replaced with its next generation through the
 * namespace's head device. An NVMe registrant is a host, not a path, so one command through whichever path the
 * kernel picks renews the registration of every controller the node connected with its host ID: there is no
 * per-path loop as for a SCSI LUN. A refusal (Reservation Conflict) is settled by the namespace's report: another
 * node's key holding it, or nothing of this node's left, means this node was preempted and is fenced out (a
 * preempted host cannot register itself back by renewing); this node's tag holding it at another generation (the
 * last renewal went through but its answer was lost) is moved on from that key. Nothing left at all, with the
 * namespace's generation below the floor the stage read ({@link PrGenerations}), is a target that restarted without
 * keeping its reservations (nvmet keeps them in memory): this host registers and acquires again, as for a LUN.
 */
final class NamespaceRenewal {

    private static final Logger LOG = Logger.getLogger(NamespaceRenewal.class.getName());

    private final NvmeReservations reservations;
    private final PrGenerations generations;

    NamespaceRenewal(NvmeReservations reservations, PrGenerations generations) {
        this.reservations = reservations;
        this.generations = generations;
    }

    /** Never throws: an error is {@link Unreachable}, tried again next round with the same key. */
    Renewal renew(String volumeId, Path head, FenceKey current) {
        FenceKey next = current.next();
        try {
            reservations.replace(head, current.value(), next.value());
            if (generations.floor(volumeId).isEmpty()) {
                learnGeneration(volumeId, head); // the first round after a plugin start
            }
            return new Renewed(next);
        } catch (NvmeCommandException.ReservationConflict conflict) {
            return settle(volumeId, head, next);
        } catch (IOException e) {
            return new Unreachable("cannot renew this node's registration through " + head + ": " + e.getMessage());
        }
    }

    private Renewal settle(String volumeId, Path head, FenceKey next) {
        ReservationStatus status;
        try {
            status = reservations.report(head);
        } catch (IOException e) {
            return new Unreachable("the renewal was refused and the namespace's reservation cannot be read through "
                    + head + ": " + e.getMessage());
        }
        Optional<Long> holder = status.holder().map(ReservationStatus.Registrant::key);
        OptionalLong floor = generations.floor(volumeId);
        if (holder.isEmpty() && status.keys().isEmpty() && floor.isPresent()
                && status.generation() < floor.getAsLong()) {
            return acquireAgain(volumeId, head, next, floor.getAsLong(), status.generation());
        }
        if (holder.isEmpty() || !next.isOurs(holder.get())) {
            dropOurs(volumeId, head, next, status);
            return new FencedOut(holder, holder.isPresent()
                    ? "the namespace is reserved by node key " + FenceKey.hex(holder.get()) + " and this node's"
                    + " registration was preempted"
                    : "the namespace's reservation is gone and this node's registration was preempted");
        }
        long held = holder.get();
        if (held == next.value()) {
            return new Renewed(next); // the earlier renewal took effect, only its answer was lost
        }
        try {
            reservations.replace(head, held, next.value());
            LOG.info(() -> "volume " + volumeId + ": moved this node's registration on from key " + FenceKey.hex(held)
                    + " (an earlier renewal's answer was lost)");
            return new Renewed(next);
        } catch (IOException e) {
            return new Unreachable("this node's key " + FenceKey.hex(held) + " holds the namespace, but this host"
                    + " cannot renew it through " + head + ": " + e.getMessage());
        }
    }

    /** Reads the namespace's generation after this host's own registration raised it: see {@link PrGenerations}. */
    private void learnGeneration(String volumeId, Path head) {
        try {
            generations.seen(volumeId, reservations.report(head).generation());
        } catch (IOException e) {
            LOG.fine(() -> "volume " + volumeId + ": cannot read the namespace's generation yet: " + e.getMessage());
        }
    }

    /**
     * No registration and no reservation left, and the generation went back below what this node read after
     * registering: the target restarted and forgot them. Another node that took the namespace since would hold it or
     * have raised the generation past the floor, so this node is the holder still, and registers and acquires again.
     * If another node acquires first, this host's registration is taken back and the node is fenced out.
     */
    private Renewal acquireAgain(String volumeId, Path head, FenceKey next, long floor, long now) {
        LOG.warning(() -> "volume " + volumeId + ": the target forgot every registration and the reservation (the"
                + " namespace's generation went back from at least " + floor + " to " + now + ": restarted without"
                + " keeping them); registering and acquiring again");
        String failure;
        try {
            reservations.register(head, next.value());
            reservations.acquire(head, next.value(), NamespaceRelease.TYPE);
            generations.forget(volumeId); // the floor went back with the target: read it afresh
            learnGeneration(volumeId, head);
            FenceEvents.reservedAgain();
            return new Renewed(next);
        } catch (NvmeCommandException.ReservationConflict conflict) {
            failure = "another node acquired the namespace first";
        } catch (IOException e) {
            failure = e.getMessage();
        }
        try {
            reservations.registerIgnoringExisting(head, 0); // registered without the reservation, it must not stay
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot take back this node's registration: " + e.getMessage());
        }
        return new FencedOut(Optional.empty(), "the target forgot the namespace's reservation and this node could not"
                + " take it again (" + failure + "); this node's registration was taken back");
    }

    /** A node fenced out keeps no registration: whatever of its tag this host still has there is taken back. */
    private void dropOurs(String volumeId, Path head, FenceKey next, ReservationStatus status) {
        for (long ours : status.keys().stream().filter(next::isOurs).distinct().toList()) {
            try {
                reservations.unregister(head, ours);
                LOG.info(() -> "volume " + volumeId + ": took back this node's registration " + FenceKey.hex(ours));
            } catch (IOException e) {
                LOG.fine(() -> "volume " + volumeId + ": registration " + FenceKey.hex(ours) + " is not this host's: "
                        + e.getMessage());
            }
        }
    }
}
