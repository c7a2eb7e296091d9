package dev.blocknode.transport.san;

import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.scsi.reservation.Reservation;
import dev.blocknode.transport.FenceKey;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The fencing step of a path repair: a returned path of a fenced volume is registered with this node's key before
 * multipathd is asked to add it, so that its writes do not meet a RESERVATION CONFLICT (which dm-multipath passes
 * up without trying another path) until the next renewal. This narrows that window and does not close it:
 * multipathd may take a disk of a known WWID on its own uevent, before this runs (docs/design/fencing.md).
 *
 * <p>A path is registered only while the LUN is still reserved by this node: a node fenced out (another node took
 * the LUN) must never register a path, since a registration would let it write again. So the reservation is read
 * before any REGISTER and read again after: a takeover between the two takes back what was registered. The key
 * registered is the one the reservation holds now, exactly: a later PREEMPT of that key (a takeover after the second
 * read) removes the returned path's registration with the others, and the next renewal finds the path at the
 * generation it expects.
 *
 * <p>Where the reservation is read: through the map's running paths first, then through the returned disks
 * themselves. PERSISTENT RESERVE IN is allowed from an I_T nexus that is not registered, under every reservation
 * type (SPC-4's table of the commands allowed in the presence of persistent reservations), and the reservation is
 * the LUN's, the same through every nexus; a returned disk's WWID was checked by the repair, and every command
 * checks it again on the opened device. So a volume whose every path was lost (every iSCSI session gone behind the
 * plugin) is proven this node's through its new disk, as a volume with a serving path is through that path: the
 * same proof, the same code.
 *
 * <p>The race with a takeover is the serving-path case's, and is closed the same way. Another node's PREEMPT
 * between the first read and the REGISTER removes this node's keys and takes the reservation; the REGISTER AND
 * IGNORE EXISTING KEY that follows still succeeds (it needs no registration) and gives the new nexus the old key
 * again, so the second read, after every REGISTER, finds the reservation another node's and takes each registration
 * back before multipathd is asked for anything: the new nexus held a key only between those commands, outside the
 * map, with nothing of this node writing through it. A PREEMPT after the second read removes the registered key,
 * which is the held one. What neither case closes is multipathd taking the disk on its own uevent before the
 * REGISTER (above); where no path served, the map's queued I/O would go down such a path at once and fail.
 */
final class ReturnedPathRegistration {

    private static final Logger LOG = Logger.getLogger(LunFencing.class.getName()); // the protocol's one source

    private final PersistentReservations pr;
    private final ScsiDevices devices;

    ReturnedPathRegistration(PersistentReservations pr, ScsiDevices devices) {
        this.pr = pr;
        this.devices = devices;
    }

    /**
     * Registers each of {@code returned} (disks of the LUN, verified, outside the map) with this node's key: returns
     * those that took it, in order; each that did not, and all of them when the LUN is not this node's, is added to
     * {@code failed} with why, and never handed to multipathd.
     */
    Map<ScsiAddress, ScsiDisk> register(String volumeId, AttachedLun lun, MultipathMap map, FenceKey ours,
                                        Map<ScsiAddress, ScsiDisk> returned, List<String> failed)
            throws InterruptedIOException {
        List<LunPath> readThrough = readThrough(lun, map, returned);
        Holder before = holder(readThrough, ours, "before registering");
        if (before.refusal().isPresent()) {
            returned.forEach((address, disk) -> failed.add(address + "=" + disk.name() + ": not added: "
                    + before.refusal().get()));
            return Map.of();
        }
        long key = before.key();
        Map<ScsiAddress, ScsiDisk> registered = new LinkedHashMap<>();
        for (Map.Entry<ScsiAddress, ScsiDisk> entry : returned.entrySet()) {
            try {
                pr.registerIgnoringExisting(path(lun, entry.getValue()), key);
                registered.put(entry.getKey(), entry.getValue());
            } catch (InterruptedIOException e) {
                throw e;
            } catch (IOException e) {
                failed.add(entry.getKey() + "=" + entry.getValue().name() + ": not added: it did not take this"
                        + " node's reservation key " + FenceKey.hex(key) + ": " + e.getMessage());
            }
        }
        if (registered.isEmpty()) {
            return registered;
        }
        Holder after = holder(readThrough, ours, "after registering");
        if (after.refusal().isPresent()) {
            for (Map.Entry<ScsiAddress, ScsiDisk> entry : registered.entrySet()) {
                unregister(volumeId, lun, entry.getValue());
                failed.add(entry.getKey() + "=" + entry.getValue().name() + ": not added: " + after.refusal().get());
            }
            return Map.of();
        }
        LOG.info(() -> "volume " + volumeId + ": registered returned path(s) " + registered.values().stream()
                .map(ScsiDisk::name).toList() + " with key " + FenceKey.hex(key) + " before adding them to "
                + map.name() + " (the reservation read through " + before.readThrough() + ", then "
                + after.readThrough() + ")");
        return registered;
    }

    /**
     * Where the reservation is read: the map's paths that are running disks of the LUN now, then the returned disks
     * (verified by the repair; no registration is needed to read).
     */
    private List<LunPath> readThrough(AttachedLun lun, MultipathMap map, Map<ScsiAddress, ScsiDisk> returned)
            throws InterruptedIOException {
        List<LunPath> paths = new ArrayList<>();
        for (String name : map.slaves()) {
            try {
                Optional<ScsiDisk> disk = devices.diskNamed(name);
                if (disk.isPresent() && devices.state(disk.get()).isRunning()
                        && devices.identity(disk.get()).map(i -> i.matches(lun.wwid())).orElse(false)) {
                    paths.add(path(lun, disk.get()));
                }
            } catch (InterruptedIOException e) {
                throw e;
            } catch (IOException unreadable) {
                // a path whose sysfs cannot be read is not one to read the reservation through
            }
        }
        returned.values().forEach(disk -> paths.add(path(lun, disk)));
        return paths;
    }

    /**
     * The reservation's key when this node's tag holds it, and the path it was read through; else why the LUN is not
     * (or not shown to be) ours.
     */
    private record Holder(long key, Optional<String> refusal, String readThrough) {
    }

    private Holder holder(List<LunPath> paths, FenceKey ours, String when) throws InterruptedIOException {
        Read read;
        try {
            read = read(paths);
        } catch (InterruptedIOException e) {
            throw e;
        } catch (IOException e) {
            return new Holder(0, Optional.of("the LUN's reservation cannot be read through any of its paths (the"
                    + " map's running ones, then the returned disks) " + when + ": " + e.getMessage()), "none");
        }
        String through = read.path().toString();
        if (read.reservation().held().isEmpty()) {
            return new Holder(0, Optional.of("the LUN is not reserved " + when + " (read through " + through
                    + "; this node may have been fenced out)"), through);
        }
        long key = read.reservation().held().get().key();
        return ours.isOurs(key) ? new Holder(key, Optional.empty(), through) : new Holder(key, Optional.of("the LUN"
                + " is reserved by node key " + FenceKey.hex(key) + ", not this node's, " + when + " (read through "
                + through + "; this node was fenced out)"), through);
    }

    private record Read(Reservation reservation, LunPath path) {
    }

    /** READ RESERVATION through the first of {@code paths} that answers. */
    private Read read(List<LunPath> paths) throws IOException {
        IOException last = null;
        for (LunPath path : paths) {
            try {
                return new Read(pr.readReservation(path), path);
            } catch (InterruptedIOException e) {
                throw e;
            } catch (IOException e) {
                last = e;
            }
        }
        throw last != null ? last : new IOException("no path of the LUN to read it through");
    }

    private void unregister(String volumeId, AttachedLun lun, ScsiDisk disk) {
        try {
            pr.registerIgnoringExisting(path(lun, disk), 0);
        } catch (IOException e) {
            LOG.warning(() -> "volume " + volumeId + ": cannot take back the registration of returned path "
                    + disk.name() + ": " + e.getMessage());
        }
    }

    private static LunPath path(AttachedLun lun, ScsiDisk disk) {
        return new LunPath(disk.devicePath(), lun.wwid());
    }
}
