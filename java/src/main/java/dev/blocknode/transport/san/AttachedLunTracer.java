package dev.blocknode.transport.san;

import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.multipath.MultipathMaps;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;
import dev.blocknode.scsi.LunIdentity;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;
import dev.blocknode.scsi.Sysfs;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Traces a block device back to the SCSI LUN under it, from sysfs alone: a multipath map (dm uuid
 * "mpath-" + WWID) gives its WWID, its name and its slaves, each slave a path disk with its H:C:T:L; a
 * SCSI disk used without a map is its own single path, named by its WWID. The result is what a staging
 * record would have held ({@link AttachedLun}), so a teardown whose record is gone releases the LUN
 * through the same code as one that has it.
 */
public final class AttachedLunTracer {

    private static final Logger LOG = Logger.getLogger(AttachedLunTracer.class.getName());

    private final HostPaths paths;
    private final ScsiDevices devices;
    private final MultipathMaps maps;

    public AttachedLunTracer(HostPaths paths, ScsiDevices devices, MultipathMaps maps) {
        this.paths = paths;
        this.devices = devices;
        this.maps = maps;
    }

    /**
     * The LUN under {@code device}; empty when the device is gone, or is neither a multipath map nor a
     * SCSI disk (a loop device, an LVM volume, a partition), or is a disk that reports no WWID (nothing
     * could show later that a disk at its address is still the same LUN).
     */
    public Optional<AttachedLun> trace(DeviceNumber device) throws IOException {
        Optional<String> name = Sysfs.linkTargetName(paths.sysBlockDevice(device));
        if (name.isEmpty()) {
            return Optional.empty();
        }
        Optional<MultipathMap> map = maps.read(name.get());
        if (map.isPresent()) {
            List<AttachedLun.LunPath> lunPaths = new ArrayList<>();
            for (String slave : map.get().slaves()) {
                devices.diskNamed(slave).ifPresent(d -> lunPaths.add(new AttachedLun.LunPath(d.address(), d.name())));
            }
            return Optional.of(new AttachedLun(map.get().wwid(), lunPaths, Optional.of(map.get().name()),
                    map.get().devicePath(paths), map.get().number(), List.of()));
        }
        Optional<ScsiDisk> disk = devices.diskNamed(name.get());
        if (disk.isEmpty()) {
            return Optional.empty();
        }
        Optional<LunIdentity> identity = devices.identity(disk.get());
        if (identity.isEmpty()) {
            LOG.warning(() -> disk.get() + " reports no WWID: it is not traced to a LUN, and will not be deleted");
            return Optional.empty();
        }
        return Optional.of(new AttachedLun(identity.get().wwid(),
                List.of(new AttachedLun.LunPath(disk.get().address(), disk.get().name())), Optional.empty(),
                disk.get().devicePath(), disk.get().number(), List.of()));
    }
}
