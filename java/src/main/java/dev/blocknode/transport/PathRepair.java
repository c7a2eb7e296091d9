package dev.blocknode.transport;

import dev.blocknode.outcome.VolumeException;

import java.util.Optional;

/**
 * What the repair loop asks of a transport whose paths do not all come back by themselves (iSCSI, FC, NVMe/TCP):
 * bring back into use the paths of a staged volume that returned after the kernel removed them, and sweep what the
 * transport made that no staging record names any more. Offered by {@link Transport#pathRepair}, as fencing is by
 * {@link Transport#fencing}, and built with what it needs at the transport's construction: the repair loop's
 * interval (a transport that spaces its attempts at an address with a {@link RetryBackoff} waits no longer than one
 * interval after a first failure, so the next pass tries again) never reaches it later.
 */
public interface PathRepair {

    /**
     * Whether {@link #repair} could do anything for the volume now: a look at sysfs with no side effect, taken without
     * holding the volume. The repair loop holds a volume (which turns kubelet's calls on it away with ABORTED while it
     * does) only when this says yes, so that a pass over healthy volumes never competes with a stage or publish. When
     * unsure, yes: the repair itself then says what is wrong.
     */
    boolean mayRepair(AttachRequest request, Attachment attachment);

    /**
     * Brings back into use the paths of a staged volume that returned (a remote port or session back after its loss
     * timeout), each path's identity verified before multipath may use it; never removes or logs out anything that
     * carries the volume, and does nothing but report while every path is down. Called by the repair loop while no
     * call holds the volume. {@code fenceKey} is the key the staging record of a volume staged with fencing holds: a
     * path may then be brought back only once it is registered with this node's key, and only while the LUN is still
     * reserved by this node, or its writes would fail at the storage (or, for a node fenced out, get through again).
     * A transport that cannot register a path repairs no fenced volume: it says it waits ({@link #cannotRegister}).
     */
    RepairedPaths repair(AttachRequest request, Attachment attachment, Optional<FenceKey> fenceKey)
            throws VolumeException;

    /**
     * Removes what this transport made on the node that no staging record names any more (a session and its node
     * record left by an undo that could not finish), and only what it can prove it made; what merely looks orphaned is
     * reported in {@link OrphanSweep#kept}, never touched. Called by the repair loop, after its pass over the staged
     * volumes, without holding any volume: the transport takes its own locks and reads {@code recorded} again under
     * them. A transport that makes nothing shared sweeps nothing ({@link OrphanSweep#NONE}).
     */
    OrphanSweep sweepOrphans(OrphanSweep.Recorded recorded) throws VolumeException;

    /** The answer for a fenced volume of a transport that cannot register a returned path with a reservation key. */
    static RepairedPaths cannotRegister(String transport) {
        return RepairedPaths.waiting("transport " + transport + " cannot register a returned path with this node's"
                + " reservation key, so the lost paths of a fenced volume are not brought back");
    }
}
