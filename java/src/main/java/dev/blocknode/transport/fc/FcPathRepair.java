package dev.blocknode.transport.fc;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.san.LeftoverLunSweep;
import dev.blocknode.transport.san.SanStack;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The FC transport's path repair: the LUN scanned again behind the remote ports of its targets that are back, and
 * the sweep of the LUNs blocknode scanned in that no record names. FC spaces no attempts per address (a scan is
 * cheap and the fabric login is the HBA's), so it needs no repair interval.
 */
final class FcPathRepair implements PathRepair {

    private final FcTargets targets;
    private final FcPorts ports;
    private final SanStack san;
    private final KeyedLocks<String> targetLocks;
    private final LeftoverLunSweep leftovers;

    FcPathRepair(FcTargets targets, FcPorts ports, SanStack san, KeyedLocks<String> targetLocks,
                 LeftoverLunSweep leftovers) {
        this.targets = targets;
        this.ports = ports;
        this.san = san;
        this.targetLocks = targetLocks;
        this.leftovers = leftovers;
    }

    /**
     * The repair of a staged volume: the LUN behind every remote port of its targets that is usable now (the stage's
     * own choice of ports), so that a port back from a loss longer than its dev_loss_tmo, whose disk the kernel deleted and, with
     * scsi_mod.scan=manual, never scans back, gets its path again. A volume attached by WWID alone scanned nothing
     * at its stage and is not scanned here either. Under fencing a returned path is registered with this node's key
     * before multipathd takes it ({@link dev.blocknode.transport.san.LunPathRepair}).
     */
    @Override
    public RepairedPaths repair(AttachRequest request, Attachment attachment, Optional<FenceKey> fenceKey)
            throws VolumeException {
        FcVolumeSpec spec = FcVolumeSpec.parse(request);
        if (!spec.scansTargets()) {
            return RepairedPaths.NONE;
        }
        Map<ScsiAddress, String> reached;
        try {
            reached = targets.usableAddresses(spec, new ArrayList<>());
        } catch (IOException e) {
            throw VolumeException.internal("volume " + request.volumeId() + ": cannot read the node's FC ports", e);
        }
        if (reached.isEmpty()) {
            return RepairedPaths.waiting("no remote port of its targets is Online");
        }
        // The repair may scan the LUN behind any of them: the proof the leftover sweep needs, durably first. No lock:
        // the volume's record names these entries throughout, so no sweep takes them.
        for (String wwpn : new LinkedHashSet<>(reached.values())) {
            targets.journal(request.volumeId(), wwpn, spec.lun().orElseThrow());
        }
        return counted(san.pathRepair().repair(request.volumeId(), attachment, List.copyOf(reached.keySet()),
                fenceKey));
    }

    @Override
    public boolean mayRepair(AttachRequest request, Attachment attachment) {
        try {
            FcVolumeSpec spec = FcVolumeSpec.parse(request);
            if (!spec.scansTargets()) {
                return false;
            }
            List<ScsiAddress> addresses = List.copyOf(targets.usableAddresses(spec, new ArrayList<>()).keySet());
            // No port Online: the repair reports that it waits (once), and touches nothing.
            return addresses.isEmpty() || san.pathRepair().needed(attachment, addresses);
        } catch (VolumeException | IOException | RuntimeException e) {
            return true;
        }
    }

    private static RepairedPaths counted(RepairedPaths repair) {
        PathRepairs.countLunPaths(FcTransport.NAME, repair.restored().size(), repair.wrongLun().size(),
                repair.failed().size());
        return repair;
    }

    /**
     * What blocknode scanned in that no staging record names any more: the disks and maps of LUNs its scan journal
     * has entries of ({@link LeftoverLunSweep}). FC makes nothing else shared (the fabric login is the HBA's).
     */
    @Override
    public OrphanSweep sweepOrphans(OrphanSweep.Recorded recorded) throws VolumeException {
        return leftovers.sweep(FcTransport.NAME, new FcLeftoverLuns(recorded, ports, targetLocks));
    }
}
