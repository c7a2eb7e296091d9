package dev.blocknode.transport.san;

import dev.blocknode.multipath.Multipath;
import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Takes back the disks of a targeted scan that ended in no attachment (the WWID was wrong, the paths
 * disagreed, or the plugin died before it recorded what it found): each disk at one of the scanned
 * addresses is deleted unless something holds or opens it, and a multipath map multipathd built over
 * those disks alone, opened by nobody, is flushed first. Best effort: the caller reports why the attach
 * failed, and what is left is logged. Shared by every SCSI transport (iSCSI then logs out of sessions
 * left without LUNs; FC has none).
 */
public final class ScanUndo {

    private static final Logger LOG = Logger.getLogger(ScanUndo.class.getName());
    private static final Duration MAP_FLUSH = Duration.ofSeconds(10);

    private final ScsiDevices devices;
    private final Multipath multipath;
    private final BlockDevices blockDevices;
    private final HostPaths hostPaths;
    private final DeviceWaiter waiter;

    public ScanUndo(ScsiDevices devices, Multipath multipath, BlockDevices blockDevices, HostPaths hostPaths,
                    DeviceWaiter waiter) {
        this.devices = devices;
        this.multipath = multipath;
        this.blockDevices = blockDevices;
        this.hostPaths = hostPaths;
        this.waiter = waiter;
    }

    /** @param why for the log: "the refused attach", "the interrupted attach" */
    public void removeUnheld(String volumeId, List<ScsiAddress> scanned, String why) {
        List<ScsiDisk> ours = new ArrayList<>();
        for (ScsiAddress address : scanned) {
            try {
                devices.diskAt(address).ifPresent(ours::add);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": cannot inspect " + address + ": " + e.getMessage());
            }
        }
        List<String> names = ours.stream().map(ScsiDisk::name).toList();
        for (ScsiDisk disk : ours) {
            try {
                for (String holder : devices.holders(disk.name())) {
                    Optional<MultipathMap> map = multipath.maps().read(holder);
                    if (map.isPresent() && names.containsAll(map.get().slaves())
                            && !blockDevices.isClaimed(map.get().devicePath(hostPaths))) {
                        multipath.remove(map.get(), waiter.deadlineAfter(MAP_FLUSH));
                    }
                }
                if (!devices.holders(disk.name()).isEmpty() || blockDevices.isClaimed(disk.devicePath())) {
                    LOG.warning(() -> "volume " + volumeId + ": leaving " + disk.name() + " in place after " + why
                            + ": something holds it");
                    continue;
                }
                devices.remove(disk);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": cannot remove " + disk.name() + " after " + why + ": "
                        + e.getMessage());
            }
        }
    }
}
