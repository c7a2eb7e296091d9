package dev.blocknode.transport.san;

import dev.blocknode.multipath.MapInUseException;
import dev.blocknode.multipath.Multipath;
import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.scsi.LunIdentity;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * One pass of a LUN's release ({@link LunAttacher#release} repeats it until nothing is left or its time is up): the
 * LUN's multipath maps removed first, then, only once no map is left, each path that still is this LUN flushed and
 * deleted. A disk at a recorded address that is another LUN now is left alone: addresses get reused.
 */
final class LunRelease {

    /** Its lines are the attacher's, as before it was split out. */
    private static final Logger LOG = Logger.getLogger(LunAttacher.class.getName());

    private final ScsiDevices devices;
    private final Multipath multipath;

    LunRelease(ScsiDevices devices, Multipath multipath) {
        this.devices = devices;
        this.multipath = multipath;
    }

    /** One pass of the release; returns what is left (empty: all gone). */
    List<String> once(AttachedLun lun, Instant deadline) throws IOException {
        List<String> left = new ArrayList<>();
        Map<String, ScsiAddress> candidates = new LinkedHashMap<>();
        for (AttachedLun.LunPath path : lun.paths()) {
            candidates.put(path.name(), path.address());
        }
        for (MultipathMap map : mapsOf(lun)) {
            for (String slave : map.slaves()) {
                if (!candidates.containsKey(slave)) {
                    devices.diskNamed(slave).ifPresent(d -> candidates.put(d.name(), d.address()));
                }
            }
            try {
                multipath.remove(map, deadline);
            } catch (MapInUseException busy) {
                left.add(busy.getMessage());
            } catch (InterruptedIOException e) {
                throw e;
            } catch (IOException e) {
                left.add("multipath map " + map + ": " + e.getMessage());
            }
        }
        if (!left.isEmpty()) {
            return left; // never delete paths from under a live map
        }
        List<ScsiAddress> addresses = new ArrayList<>(candidates.values());
        lun.missing().stream().filter(a -> !addresses.contains(a)).forEach(addresses::add);
        for (ScsiAddress address : addresses) {
            Optional<ScsiDisk> disk = devices.diskAt(address);
            if (disk.isPresent() && isOurs(lun, disk.get())) {
                removePath(disk.get()).ifPresent(left::add);
            }
        }
        return left;
    }

    /**
     * This LUN's maps: the recorded map at its device number when its WWID is this LUN's (WWID is authoritative,
     * the recorded name only a name), and any map over a recorded path that still is this LUN: multipathd may
     * have built one after a single-path attach, under a WWID spelt from another of the LUN's designators. A
     * node has at most one map per WWID, so these are looked up per path, without reading every map of the node
     * (with hundreds of LUNs staged, a drain read them all once per volume). Every map is read only when the
     * record names a map and neither its device nor its paths lead to one (a map rebuilt over new disks after
     * its paths were all lost, or a pass after the map is gone and a path still has to go).
     */
    private List<MultipathMap> mapsOf(AttachedLun lun) throws IOException {
        List<MultipathMap> maps = new ArrayList<>();
        if (lun.mapName().isPresent()) {
            multipath.maps().atDevice(lun.number()).filter(map -> map.wwid().matches(lun.wwid()))
                    .ifPresent(maps::add);
        }
        for (AttachedLun.LunPath path : lun.paths()) {
            Optional<ScsiDisk> disk = devices.diskAt(path.address());
            if (disk.isEmpty() || !isOurs(lun, disk.get())) {
                continue;
            }
            Optional<MultipathMap> holder = multipath.maps().holding(disk.get().name());
            if (holder.isPresent() && !maps.contains(holder.get())) {
                maps.add(holder.get());
            }
        }
        if (maps.isEmpty() && lun.mapName().isPresent()) {
            for (MultipathMap map : multipath.maps().all()) {
                if (map.wwid().matches(lun.wwid())) {
                    maps.add(map);
                }
            }
        }
        return maps;
    }

    /** A disk at a recorded address is deleted only if it still is this LUN: addresses get reused. */
    private boolean isOurs(AttachedLun lun, ScsiDisk disk) throws IOException {
        Optional<LunIdentity> identity = devices.identity(disk);
        if (identity.isEmpty()) {
            LOG.warning(() -> "leaving " + disk + " alone: it reports no WWID, so it cannot be shown to be LUN "
                    + lun.wwid());
            return false;
        }
        if (!identity.get().matches(lun.wwid())) {
            LOG.info(() -> disk + " is LUN " + identity.get().wwid() + " now, not " + lun.wwid() + "; leaving it");
            return false;
        }
        return true;
    }

    private Optional<String> removePath(ScsiDisk disk) throws IOException {
        List<String> holders = devices.holders(disk.name());
        if (!holders.isEmpty()) {
            List<String> named = new ArrayList<>();
            for (String holder : holders) {
                named.add(multipath.maps().describe(holder));
            }
            return Optional.of("path " + disk + " is held by " + String.join(", ", named));
        }
        try {
            devices.remove(disk);
        } catch (InterruptedIOException e) {
            throw e;
        } catch (IOException e) {
            return Optional.of("path " + disk + ": " + e.getMessage());
        }
        if (devices.isPresent(disk)) {
            return Optional.of("path " + disk + " is still present after its delete");
        }
        LOG.info(() -> "deleted path " + disk);
        return Optional.empty();
    }
}
