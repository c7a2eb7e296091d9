package dev.blocknode.transport.iscsi;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.san.LeftoverLunSweep;

import java.io.IOException;
import java.util.Optional;

/**
 * The iSCSI transport's path repair: each portal of a staged volume whose session is gone logged in again with its
 * node record, and the LUN's path on it scanned, checked and given to multipathd ({@link IscsiPathRepair}); then the
 * sweeps of what blocknode made that no record names. The volume's spec is read once per call and passed down.
 */
final class IscsiRepairs implements PathRepair {

    private final IscsiPathRepair paths;
    private final LeftoverLunSweep leftovers;
    private final OrphanSessionSweep sessionSweep;
    private final IscsiInitiator initiator;

    IscsiRepairs(IscsiPathRepair paths, LeftoverLunSweep leftovers, OrphanSessionSweep sessionSweep,
                 IscsiInitiator initiator) {
        this.paths = paths;
        this.leftovers = leftovers;
        this.sessionSweep = sessionSweep;
        this.initiator = initiator;
    }

    @Override
    public boolean mayRepair(AttachRequest request, Attachment attachment) {
        try {
            return paths.needed(IscsiVolumeSpec.from(request), attachment);
        } catch (VolumeException | IOException | RuntimeException e) {
            return true;
        }
    }

    /**
     * A session iscsid is recovering is left to it, and nothing is ever logged out. With {@code fenceKey}, each disk
     * the LUN shows on a session logged in again (a new I_T nexus, which the target keeps no registration for) is
     * registered with the key the LUN's reservation holds, while this node's tag holds it, before multipathd is asked
     * to take it ({@link dev.blocknode.transport.san.LunPathRepair}).
     */
    @Override
    public RepairedPaths repair(AttachRequest request, Attachment attachment, Optional<FenceKey> fenceKey)
            throws VolumeException {
        return paths.repair(request.volumeId(), IscsiVolumeSpec.from(request), attachment, fenceKey);
    }

    /**
     * What blocknode made that nothing names any more: first the disks and maps of LUNs it scanned in
     * ({@link LeftoverLunSweep}), then the sessions and node records it logged in with ({@link OrphanSessionSweep}),
     * so that a session left carrying only such a disk is logged out in the same pass.
     */
    @Override
    public OrphanSweep sweepOrphans(OrphanSweep.Recorded recorded) throws VolumeException {
        OrphanSweep luns = leftovers.sweep(IscsiTransport.NAME,
                new IscsiLeftoverLuns(recorded, initiator.sessions(), initiator.sessionLocks()));
        return luns.and(sessionSweep.sweep(recorded));
    }
}
