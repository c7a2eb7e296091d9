package dev.blocknode.multipath;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;
import dev.blocknode.scsi.Wwid;

import java.nio.file.Path;
import java.util.List;

/**
 * A dm-multipath map as sysfs shows it: kernel name ("dm-3"), map name ("mpatha" or the WWID), the WWID
 * from its dm uuid ("mpath-" + WWID), its device number, and its path devices (slaves).
 */
public record MultipathMap(String kernelName, String name, Wwid wwid, DeviceNumber number, List<String> slaves) {

    public static final String UUID_PREFIX = "mpath-";

    public MultipathMap {
        slaves = List.copyOf(slaves);
    }

    /** /dev/dm-N: created by the kernel (devtmpfs) itself, so present even before udev adds /dev/mapper. */
    public Path devicePath(HostPaths paths) {
        return paths.dev().resolve(kernelName);
    }

    @Override
    public String toString() {
        return name + " (" + kernelName + ", " + wwid + ")";
    }
}
