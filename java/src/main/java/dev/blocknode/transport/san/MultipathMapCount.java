package dev.blocknode.transport.san;

import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.multipath.MultipathMaps;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;

import java.io.IOException;
import java.util.Set;

/**
 * The multipath maps on the node that none of the given devices is: the iSCSI and Fibre Channel LUNs the node
 * holds outside blocknode, which take a place under the node's volume limit (see volume.VolumeLimit). Read from
 * sysfs alone (a few small files per dm device), so it is cheap enough for every NodeGetInfo and every new stage.
 */
public final class MultipathMapCount {

    private final MultipathMaps maps;

    public MultipathMapCount(HostPaths paths) {
        this.maps = new MultipathMaps(paths);
    }

    public int countNotAmong(Set<DeviceNumber> owned) throws IOException {
        int count = 0;
        for (MultipathMap map : maps.all()) {
            if (!owned.contains(map.number())) {
                count++;
            }
        }
        return count;
    }
}
