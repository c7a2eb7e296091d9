package dev.blocknode.transport.san;

import dev.blocknode.metrics.Phases;
import dev.blocknode.multipath.Multipath;
import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.scsi.LunIdentity;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;
import dev.blocknode.scsi.ScsiHosts;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Brings a LUN in at one H:C:T:L, for every SCSI transport: a targeted scan when no disk is there, and when
 * one is, a fresh look at which LUN it is.
 *
 * <p>Why the fresh look: the kernel reads a disk's identity (VPD page 0x83, sysfs {@code wwid}) when it probes
 * the LUN and keeps it. When the array deletes that LUN and maps another one at the same number, the disk
 * stays, still naming the deleted LUN, while its I/O reaches the new one; a targeted scan of an address that
 * has a disk changes nothing (measured in the VM tier over FC, test-e2e/vm/README.md). Such a stale disk
 * would pass the identity check of a request for the deleted volume and hand it another volume's blocks. So
 * a running disk found at the address has its VPD pages read again ({@code device/rescan}); if it turns out
 * to be another LUN than it claimed, it is deleted and the address scanned afresh, so that the new LUN gets a
 * disk, udev properties and a multipath identity of its own. multipathd may have built a map of the deleted
 * LUN over stale disks: such a map, none of whose paths is that LUN any more, is flushed first unless it is
 * open. A stale disk that something else holds or opens stays (the attach's identity checks then refuse
 * it). A disk that is not running is left as it is: nothing reaches the LUN to ask (a rescan would wait for
 * the transport), and the attach needs a running path anyway.
 */
public final class TargetedScan {

    private static final Logger LOG = Logger.getLogger(TargetedScan.class.getName());
    private static final Duration MAP_FLUSH = Duration.ofSeconds(10);

    private final ScsiHosts hosts;
    private final ScsiDevices devices;
    private final ScanUndo scanUndo;
    private final Multipath multipath;
    private final BlockDevices blockDevices;
    private final HostPaths hostPaths;
    private final DeviceWaiter waiter;

    public TargetedScan(ScsiHosts hosts, ScsiDevices devices, ScanUndo scanUndo, Multipath multipath,
                        BlockDevices blockDevices, HostPaths hostPaths, DeviceWaiter waiter) {
        this.hosts = hosts;
        this.devices = devices;
        this.scanUndo = scanUndo;
        this.multipath = multipath;
        this.blockDevices = blockDevices;
        this.hostPaths = hostPaths;
        this.waiter = waiter;
    }

    /**
     * Scans {@code address} in unless a disk there is still the LUN it says it is.
     *
     * @return true when this call scanned the address: a disk there now came from this call's scan
     * @throws java.nio.file.NoSuchFileException when the SCSI host is gone
     */
    public boolean bringIn(String volumeId, ScsiAddress address) throws IOException {
        Optional<ScsiDisk> disk = devices.diskAt(address);
        if (disk.isPresent() && !replacedStale(volumeId, disk.get())) {
            return false;
        }
        Phases.run("scan", () -> hosts.scan(address)); // this LUN only: never a whole-host scan
        return true;
    }

    /** True when the disk was a stale one of another LUN and is gone now; false when it stays in use. */
    private boolean replacedStale(String volumeId, ScsiDisk disk) throws IOException {
        Optional<LunIdentity> probed = devices.identity(disk);
        Optional<LunIdentity> now = reprobed(disk);
        if (probed.isEmpty() || now.isEmpty() || probed.get().sameLunAs(now.get())) {
            return false;
        }
        String what = disk + " at " + disk.address() + " was probed as LUN " + probed.get().wwid()
                + " but the array has LUN " + now.get().wwid() + " there now (the LUN number was reused)";
        LOG.warning(() -> "volume " + volumeId + ": " + what);
        removeDeadMaps(volumeId, disk, probed.get());
        return removedIfUnheld(volumeId, disk);
    }

    /** Deletes a stale disk unless something holds or opens it (as a refused attach's disks); true when it is gone. */
    private boolean removedIfUnheld(String volumeId, ScsiDisk disk) throws IOException {
        scanUndo.removeUnheld(volumeId, List.of(disk.address()), "finding it stale");
        return !devices.isPresent(disk);
    }

    /** The disk's identity as the LUN at its address gives it now; empty when it is not running. */
    private Optional<LunIdentity> reprobed(ScsiDisk disk) throws IOException {
        if (!devices.state(disk).isRunning()) {
            return Optional.empty();
        }
        devices.rescan(disk);
        return devices.identity(disk);
    }

    /**
     * Flushes each map of the deleted LUN over the stale disk that no path leads to that LUN any more and nobody
     * opens, then deletes its other paths, stale as well (their identity was just read again, so they would not
     * be recognised as stale later).
     */
    private void removeDeadMaps(String volumeId, ScsiDisk stale, LunIdentity deleted) throws IOException {
        for (String holder : devices.holders(stale.name())) {
            Optional<MultipathMap> map = multipath.maps().read(holder);
            if (map.isEmpty() || !deleted.matches(map.get().wwid()) || anyPathStillIs(map.get(), stale, deleted)
                    || blockDevices.isClaimed(map.get().devicePath(hostPaths))) {
                continue;
            }
            LOG.warning(() -> "volume " + volumeId + ": flushing multipath map " + map.get() + ": none of its paths"
                    + " leads to LUN " + deleted.wwid() + " any more");
            multipath.remove(map.get(), waiter.deadlineAfter(MAP_FLUSH));
            for (String slave : map.get().slaves()) {
                Optional<ScsiDisk> path = devices.diskNamed(slave);
                if (path.isPresent() && !path.get().equals(stale)) {
                    removedIfUnheld(volumeId, path.get());
                }
            }
        }
    }

    /** True unless every other path of the map is a running disk that is another LUN now. */
    private boolean anyPathStillIs(MultipathMap map, ScsiDisk stale, LunIdentity lun) throws IOException {
        for (String slave : map.slaves()) {
            Optional<ScsiDisk> path = devices.diskNamed(slave);
            if (path.isEmpty() || path.get().equals(stale)) {
                continue;
            }
            Optional<LunIdentity> now = reprobed(path.get());
            if (now.isEmpty() || now.get().sameLunAs(lun)) {
                return true;
            }
        }
        return false;
    }
}
