package dev.blocknode.transport.nvme;

import dev.blocknode.nvme.reservation.NvmeCommandException;
import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.nvme.reservation.ReservationType;
import dev.blocknode.transport.FenceKey;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.logging.Logger;

/**
 * The unstage's part of fencing a namespace, best effort: this host's reservation released and its registration
 * taken back through the head device, before the controllers are deleted. The key the volume was staged with is
 * tried first; when the namespace refuses it (a renewal moved it on, its answer lost), the keys of this node's tag
 * the report shows are tried in turn: a conflict with one only means it is not this host's. Another node's key is
 * never sent. A registration left behind blocks no one for longer than the takeover time: the node's key no longer
 * changes.
 */
final class NamespaceRelease {

    static final ReservationType TYPE = ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY;
    private static final Logger LOG = Logger.getLogger(NamespaceRelease.class.getName());

    private final NvmeReservations reservations;

    NamespaceRelease(NvmeReservations reservations) {
        this.reservations = reservations;
    }

    /** Never throws; says in the log what could not be taken back. */
    void release(String volumeId, Path head, FenceKey key) {
        try {
            releaseWith(head, key.value());
            return;
        } catch (NvmeCommandException.ReservationConflict movedOn) {
            // this host is registered with another generation of the key, or not at all: the report says
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot release the namespace's reservation through " + head
                    + ": " + e.getMessage() + "; another node may take it over once this node's key stands still");
            return;
        }
        List<Long> ours;
        try {
            ours = reservations.report(head).keys().stream().filter(key::isOurs).distinct().toList();
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": key " + key + " was refused and the namespace's registrations"
                    + " cannot be read through " + head + ": " + e.getMessage());
            return;
        }
        for (long other : ours) {
            try {
                releaseWith(head, other);
                LOG.info(() -> "volume " + volumeId + ": released with this node's key " + FenceKey.hex(other)
                        + " (not the staged key " + key + ")");
                return;
            } catch (IOException e) {
                LOG.fine(() -> "volume " + volumeId + ": key " + FenceKey.hex(other) + " is not this host's: "
                        + e.getMessage());
            }
        }
    }

    /** Release (a no-op for a registrant that holds nothing), then Unregister. */
    private void releaseWith(Path head, long key) throws IOException {
        reservations.release(head, key, TYPE);
        reservations.unregister(head, key);
    }
}
