package dev.blocknode.transport.san;

import dev.blocknode.multipath.Multipath;
import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.multipath.PathHealth;
import dev.blocknode.os.wait.WaitTimeoutException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunIdentity;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.RepairedPaths;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Brings a staged LUN's lost paths back into its multipath map, for every SCSI transport: the transport names the
 * addresses where the LUN should be now (FC: behind each Online remote port of its targets), and each one without a
 * disk is scanned ({@link TargetedScan}, this LUN only), the disk that appears is checked to be the LUN the volume
 * was staged with before multipathd is asked to take it, as at stage, and a disk that is another LUN is taken off
 * again ({@link ScanUndo}) and reported. A disk of the LUN already at an address but outside the map (multipathd
 * did not take it) is handed to multipathd as well. For a fenced volume each such disk is registered with this
 * node's key first ({@link ReturnedPathRegistration}), and one that is not registered is not handed to multipathd.
 *
 * <p>What it never does, so that a repair cannot make an outage worse: remove or flush anything of the volume's
 * map or of a path in it; scan anything while no path of the map serves (every path down: the map may be queueing
 * I/O, and a scan behind a port that flaps only adds devices in limbo; it reports and waits), unless its transport
 * vouches for the addresses ({@link #repairOnLiveConnections}: an iSCSI session logged in, which a scan cannot find
 * in limbo); build a map for a LUN staged without one.
 */
public final class LunPathRepair {

    private final ScsiDevices devices;
    private final TargetedScan targetedScan;
    private final ScanUndo scanUndo;
    private final LunAttacher attacher;
    private final MultipathDaemon daemon;
    private final LunAttacher.Timeouts timeouts;
    private final ReturnedPathRegistration registration;

    LunPathRepair(ScsiDevices devices, TargetedScan targetedScan, ScanUndo scanUndo, LunAttacher attacher,
                  MultipathDaemon daemon, LunAttacher.Timeouts timeouts, PersistentReservations reservations) {
        this.devices = devices;
        this.targetedScan = targetedScan;
        this.scanUndo = scanUndo;
        this.attacher = attacher;
        this.daemon = daemon;
        this.timeouts = timeouts;
        this.registration = new ReturnedPathRegistration(reservations, devices);
    }

    /**
     * Repairs the attachment's LUN at {@code expected}, the addresses its transport reaches it through now; under
     * fencing ({@code fenceKey}, this node's key as the staging record has it; empty for a volume staged without)
     * a returned path is registered with the key the LUN's reservation holds before multipathd is asked to take it,
     * and only while that key is ours.
     *
     * @throws VolumeException INTERNAL when the record is unreadable or sysfs cannot be read
     */
    public RepairedPaths repair(String volumeId, Attachment attachment, List<ScsiAddress> expected,
                             Optional<FenceKey> fenceKey) throws VolumeException {
        return repairMapped(volumeId, attachment, expected, fenceKey, false);
    }

    /**
     * {@link #repair} at addresses its transport has just seen live (each one behind an iSCSI session in LOGGED_IN,
     * logged in again by the repair or never lost), done even while no path of the map serves. That is the case of a
     * volume all of whose sessions are gone (killed, logged out behind the plugin's back): its map, held open by the
     * mount, has no path left and queues its I/O (for as long as no_path_retry says), and nothing but a login and a
     * scan brings a path back. Adding a path takes nothing away, and the identity of each disk is checked before
     * multipathd gets it, as always. For a fenced volume ({@code fenceKey} as in {@link #repair}), with no path of
     * the map serving, the reservation is read through the new disks themselves (reading needs no registration), and
     * they are registered and added only while this node's tag holds it; otherwise, or when it cannot be read, each is
     * reported failed and none is added.
     */
    public RepairedPaths repairOnLiveConnections(String volumeId, Attachment attachment, List<ScsiAddress> live,
                                              Optional<FenceKey> fenceKey) throws VolumeException {
        return repairMapped(volumeId, attachment, live, fenceKey, true);
    }

    private RepairedPaths repairMapped(String volumeId, Attachment attachment, List<ScsiAddress> expected,
                                       Optional<FenceKey> fenceKey, boolean evenIfNoneServes) throws VolumeException {
        AttachedLun lun = LunAttacher.recorded(attachment.details(), attachment.device(), attachment.number());
        if (lun.mapName().isEmpty()) {
            return RepairedPaths.NONE; // staged on one path without multipathd: there is no map to add a path to
        }
        try {
            Multipath multipath = attacher.multipath();
            Optional<MultipathMap> map = multipath.maps().byName(lun.mapName().get());
            if (map.isEmpty()) {
                return RepairedPaths.waiting("its multipath map " + lun.mapName().get() + " is gone; nothing is scanned"
                        + " for a map that is not there");
            }
            Optional<PathHealth.Report> health = attacher.pathHealth(attachment.details(), attachment.device(),
                    attachment.number());
            if (!evenIfNoneServes && health.isPresent() && health.get().serving() == 0) {
                return RepairedPaths.waiting("no path of multipath map " + map.get() + " serves I/O; nothing is"
                        + " scanned or removed until one does");
            }
            return repairAt(volumeId, attachment, lun, map.get(), expected, fenceKey);
        } catch (InterruptedIOException e) {
            Thread.currentThread().interrupt();
            throw VolumeException.internal("volume " + volumeId + ": path repair interrupted", e);
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the LUN's paths to repair them", e);
        }
    }

    /**
     * Whether {@link #repair} would scan or add anything at {@code expected}: an address without a disk, or an unheld
     * disk of the LUN outside its map; also a map that is gone (the repair reports it). Reads sysfs only.
     */
    public boolean needed(Attachment attachment, List<ScsiAddress> expected) throws IOException, VolumeException {
        AttachedLun lun = LunAttacher.recorded(attachment.details(), attachment.device(), attachment.number());
        if (lun.mapName().isEmpty()) {
            return false;
        }
        // First where the record says the map is (the staged device of a multipathed LUN is its map): reading every
        // map of the node for each volume made a pass over N volumes cost N^2 map reads.
        Optional<MultipathMap> map = attacher.multipath().maps().byName(lun.mapName().get(), attachment.number());
        if (map.isEmpty()) {
            return true;
        }
        for (ScsiAddress address : expected) {
            Optional<ScsiDisk> disk = devices.diskAt(address);
            if (disk.isEmpty() || (!map.get().slaves().contains(disk.get().name()) && isUnheldPathOf(lun, disk.get()))) {
                return true;
            }
        }
        return false;
    }

    private RepairedPaths repairAt(String volumeId, Attachment attachment, AttachedLun lun, MultipathMap map,
                                List<ScsiAddress> expected, Optional<FenceKey> fenceKey)
            throws IOException, VolumeException {
        List<String> wrongLun = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        List<ScsiAddress> toScan = new ArrayList<>();
        Map<ScsiAddress, ScsiDisk> toAdd = new LinkedHashMap<>();
        for (ScsiAddress address : expected) {
            Optional<ScsiDisk> disk = devices.diskAt(address);
            if (disk.isEmpty()) {
                toScan.add(address);
            } else if (!map.slaves().contains(disk.get().name()) && isUnheldPathOf(lun, disk.get())) {
                toAdd.put(address, disk.get());
            }
            // Anything else at the address (a path in the map, another LUN, a disk something holds) is left alone.
        }
        List<ScsiAddress> scanned = new ArrayList<>();
        for (ScsiAddress address : toScan) {
            try {
                targetedScan.bringIn(volumeId, address);
                scanned.add(address);
            } catch (InterruptedIOException e) {
                throw e;
            } catch (IOException e) {
                failed.add(address + ": the scan failed: " + e.getMessage());
            }
        }
        Map<ScsiAddress, ScsiDisk> appeared = scanned.isEmpty() ? Map.of() : attacher.awaitDisks(volumeId, scanned);
        for (ScsiAddress address : scanned) {
            ScsiDisk disk = appeared.get(address);
            if (disk == null) {
                failed.add(address + ": no disk appeared within " + timeouts.paths().toSeconds() + " s of its scan");
                continue;
            }
            Optional<LunIdentity> identity = devices.identity(disk);
            if (identity.isEmpty() || !identity.get().matches(lun.wwid())) {
                wrongLun.add(address + "=" + disk.name() + " is "
                        + identity.map(i -> "LUN " + i.wwid()).orElse("a disk without a WWID") + ", not " + lun.wwid());
                scanUndo.removeUnheld(volumeId, List.of(address), "finding another LUN at a path of the volume");
                continue;
            }
            toAdd.put(address, disk);
        }
        if (fenceKey.isPresent() && !toAdd.isEmpty()) {
            toAdd = registration.register(volumeId, lun, map, fenceKey.get(), toAdd, failed);
        }
        List<AttachedLun.LunPath> restored = toAdd.isEmpty() ? List.of() : addToMap(lun, toAdd, failed);
        return new RepairedPaths(restored.stream().map(AttachedLun.LunPath::toString).toList(), wrongLun, failed,
                Optional.empty(), restored.isEmpty() ? Optional.empty() : Optional.of(recorded(attachment, lun,
                restored)));
    }

    /** The attachment's details with the returned paths in place of those recorded at their addresses. */
    private static Map<String, String> recorded(Attachment attachment, AttachedLun lun,
                                                List<AttachedLun.LunPath> returned) {
        Map<String, String> details = new LinkedHashMap<>(attachment.details());
        details.remove(AttachedLun.MISSING);
        details.putAll(lun.withPaths(returned).details());
        return details;
    }

    /** A disk of this LUN (as it was probed) that is running and that nothing holds: one multipathd left out. */
    private boolean isUnheldPathOf(AttachedLun lun, ScsiDisk disk) throws IOException {
        return devices.identity(disk).map(i -> i.matches(lun.wwid())).orElse(false)
                && devices.state(disk).isRunning() && devices.holders(disk.name()).isEmpty();
    }

    /**
     * Asks multipathd to take the verified disks into the LUN's map (the stage's own step, {@link
     * LunAttacher#assembleMap}); returns those it took.
     */
    private List<AttachedLun.LunPath> addToMap(AttachedLun lun, Map<ScsiAddress, ScsiDisk> disks, List<String> failed)
            throws IOException {
        List<String> names = disks.values().stream().map(ScsiDisk::name).toList();
        LunIdentity identity = devices.identity(disks.values().iterator().next()).orElseThrow();
        MultipathMap map;
        try {
            map = attacher.assembleMap(identity, names, daemon.isRunning());
        } catch (WaitTimeoutException e) {
            disks.forEach((address, disk) -> failed.add(address + "=" + disk.name() + ": no multipath map of LUN "
                    + lun.wwid() + " took it"));
            return List.of();
        }
        List<AttachedLun.LunPath> restored = new ArrayList<>();
        for (Map.Entry<ScsiAddress, ScsiDisk> entry : disks.entrySet()) {
            AttachedLun.LunPath path = new AttachedLun.LunPath(entry.getKey(), entry.getValue().name());
            if (map.slaves().contains(entry.getValue().name())) {
                restored.add(path);
            } else {
                failed.add(path + ": multipath map " + map + " did not take it within " + timeouts.map().toSeconds()
                        + " s");
            }
        }
        return restored;
    }
}
