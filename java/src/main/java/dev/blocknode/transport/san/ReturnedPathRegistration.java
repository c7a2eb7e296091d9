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
 * A path is registered only while the LUN is still reserved by this node: a node fenced out (another node took
 * the LUN) must never register a path, since a registration would let it write again. So the reservation is read through a path of the map that serves before any REGISTER, and read again
 * after: a takeover between the two takes back what was registered. The key registered is the one the reservation
 * holds now, exactly: a later PREEMPT of that key (a takeover after the second read) removes the returned path's
 * registration with the others, and the next renewal finds the path at the generation it expects.
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
        List<LunPath> serving = serving(lun, map);
        Holder before = holder(serving, ours, "before registering");
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
        Optional<String> after = holder(serving, ours, "after registering").refusal();
        if (after.isPresent()) {
            for (Map.Entry<ScsiAddress, ScsiDisk> entry : registered.entrySet()) {
                unregister(volumeId, lun, entry.getValue());
                failed.add(entry.getKey() + "=" + entry.getValue().name() + ": not added: " + after.get());
            }
            return Map.of();
        }
        LOG.info(() -> "volume " + volumeId + ": registered returned path(s) " + registered.values().stream()
                .map(ScsiDisk::name).toList() + " with key " + FenceKey.hex(key) + " before adding them to "
                + map.name());
        return registered;
    }

    /** The map's paths that are running disks of the LUN now: where the reservation is read. */
    private List<LunPath> serving(AttachedLun lun, MultipathMap map) throws InterruptedIOException {
        List<LunPath> serving = new ArrayList<>();
        for (String name : map.slaves()) {
            try {
                Optional<ScsiDisk> disk = devices.diskNamed(name);
                if (disk.isPresent() && devices.state(disk.get()).isRunning()
                        && devices.identity(disk.get()).map(i -> i.matches(lun.wwid())).orElse(false)) {
                    serving.add(path(lun, disk.get()));
                }
            } catch (InterruptedIOException e) {
                throw e;
            } catch (IOException unreadable) {
                // a path whose sysfs cannot be read is not one to read the reservation through
            }
        }
        return serving;
    }

    /** The reservation's key when this node's tag holds it; else why the LUN is not (or not shown to be) ours. */
    private record Holder(long key, Optional<String> refusal) {
    }

    private Holder holder(List<LunPath> serving, FenceKey ours, String when) throws InterruptedIOException {
        Reservation reservation;
        try {
            reservation = read(serving);
        } catch (InterruptedIOException e) {
            throw e;
        } catch (IOException e) {
            return new Holder(0, Optional.of("the LUN's reservation cannot be read through a serving path " + when
                    + ": " + e.getMessage()));
        }
        if (reservation.held().isEmpty()) {
            return new Holder(0, Optional.of("the LUN is not reserved " + when + " (this node may have been fenced"
                    + " out)"));
        }
        long key = reservation.held().get().key();
        return ours.isOurs(key) ? new Holder(key, Optional.empty()) : new Holder(key, Optional.of("the LUN is"
                + " reserved by node key " + FenceKey.hex(key) + ", not this node's, " + when + " (this node was"
                + " fenced out)"));
    }

    private Reservation read(List<LunPath> serving) throws IOException {
        IOException last = null;
        for (LunPath path : serving) {
            try {
                return pr.readReservation(path);
            } catch (InterruptedIOException e) {
                throw e;
            } catch (IOException e) {
                last = e;
            }
        }
        throw last != null ? last : new IOException("no path of the map is running");
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
