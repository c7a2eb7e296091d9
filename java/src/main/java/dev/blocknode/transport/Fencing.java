package dev.blocknode.transport;

import dev.blocknode.outcome.VolumeException;

import java.util.Optional;

/**
 * Fencing at the storage for a transport whose LUNs take SCSI-3 persistent reservations (iSCSI, FC) or whose
 * namespaces take NVMe reservations (NVMe/TCP): the node's key registered on every path of the LUN (for NVMe, once
 * for the host) and a Write Exclusive - Registrants Only reservation held, so that another node's writes fail at
 * the target, and so that a node the cluster lost track of can be cut off there. The volume layer decides which
 * volumes are fenced and when; this is what it asks of the transport.
 */
public interface Fencing {

    /** What a stage got: the reservation held with {@code key}, or none because the LUN cannot be fenced. */
    sealed interface Acquired {
    }

    /** The reservation is this node's, held with {@code key} (registered on {@code paths} of the LUN's paths). */
    record Held(FenceKey key, int paths, Optional<String> tookOverFrom) implements Acquired {
    }

    /** The LUN does not support what fencing needs (persistent reservations, type 5); nothing was changed. */
    record Unsupported(String why) implements Acquired {
    }

    /** What a renewal round found. */
    sealed interface Renewal {
    }

    /** Renewed: the key is now {@code key} on the paths that answered. */
    record Renewed(FenceKey key) implements Renewal {
    }

    /** No path answered: nothing is known, the key stays; try again next round. */
    record Unreachable(String why) implements Renewal {
    }

    /** Another node preempted this one: its paths are off the LUN. {@code holder} is the new holder's key, if any. */
    record FencedOut(Optional<Long> holder, String why) implements Renewal {
    }

    /**
     * Registers {@code key}'s tag on every path of the attached LUN and reserves it, before the device is formatted
     * or mounted. The key's generation is chosen here (past any of this tag's left on the target).
     *
     * @throws VolumeException FAILED_PRECONDITION naming the holder's key when another node holds the LUN and
     *                         the takeover rule does not allow taking it yet; INTERNAL when no path answers
     */
    Acquired acquire(String volumeId, Attachment attachment, FenceKey key) throws VolumeException;

    /** Re-registers every path with the next generation (the proof of life), as plain REGISTER. Never throws. */
    Renewal renew(String volumeId, Attachment attachment, FenceKey current);

    /**
     * Takes this node's registrations (any key with {@code key}'s tag) and its reservation off the LUN, through
     * the paths that answer; best effort (a reservation left with our tag blocks no one for longer than the
     * takeover time), never touching another node's keys.
     */
    void release(String volumeId, Attachment attachment, FenceKey key);
}
