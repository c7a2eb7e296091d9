package dev.blocknode.transport.nvme;

import dev.blocknode.nvme.reservation.NvmeCommandException;
import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.nvme.reservation.ReservationStatus;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing.FencedOut;
import dev.blocknode.transport.Fencing.Renewal;
import dev.blocknode.transport.Fencing.Renewed;
import dev.blocknode.transport.Fencing.Unreachable;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The proof of life of a fenced NVMe namespace: this host's key replaced with its next generation through the
 * namespace's head device. An NVMe registrant is a host, not a path, so one command through whichever path the
 * kernel picks renews the registration of every controller the node connected with its host ID: there is no
 * per-path loop as for a SCSI LUN. A refusal (Reservation Conflict) is settled by the namespace's report: another
 * node's key holding it, or nothing of this node's left, means this node was preempted and is fenced out (a
 * preempted host cannot register itself back by renewing); this node's tag holding it at another generation (the
 * last renewal went through but its answer was lost) is moved on from that key.
 * <p>
 * The first job of the nvme-tcp fencing protocol, not offered by the transport yet (docs/design/fencing.md, "NVMe/TCP
 * fencing: the plan"); a target that restarted and forgot every registration is the acquisition's generation floor's
 * to recognise, which comes with it.
 */
final class NamespaceRenewal {

    private static final Logger LOG = Logger.getLogger(NamespaceRenewal.class.getName());

    private final NvmeReservations reservations;

    NamespaceRenewal(NvmeReservations reservations) {
        this.reservations = reservations;
    }

    /** Never throws: an error is {@link Unreachable}, tried again next round with the same key. */
    Renewal renew(String volumeId, Path head, FenceKey current) {
        FenceKey next = current.next();
        try {
            reservations.replace(head, current.value(), next.value());
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
