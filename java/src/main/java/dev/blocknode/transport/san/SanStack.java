package dev.blocknode.transport.san;

import dev.blocknode.metrics.Phases;
import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.ScsiDevices;
import dev.blocknode.scsi.ScsiDisk;
import dev.blocknode.scsi.ScsiHosts;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.PathReport;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The SCSI stack under every SAN transport, built in one place: the SCSI hosts to scan, their disks, the
 * {@link TargetedScan} that brings a LUN in at an address, the {@link LunAttacher} (wait, verify, multipath,
 * release), the {@link ScanUndo} of a scan that ended in no attachment and the {@link LunFencing} of an attached
 * LUN, all over the same sysfs writer and device waiter. A transport composes one and adds only how a LUN
 * becomes reachable (FC: remote ports; iSCSI: sessions) and what its attachment records beside the LUN; what a
 * SAN attachment is to path health, growth, release and fencing is the same for all of them, so it is here.
 */
public final class SanStack {

    private final ScsiHosts hosts;
    private final ScsiDevices devices;
    private final TargetedScan targetedScan;
    private final LunAttacher attacher;
    private final ScanUndo scanUndo;
    private final LunFencing fencing;
    private final LunPathRepair pathRepair;
    private final Host host;

    /**
     * What a SAN transport's stack is built over besides the host: the sysfs writer its scans and deletes go through
     * (tests give a fake), the device waiter, multipathd, and how long each step may take.
     */
    public record Parts(SysfsWriter writer, DeviceWaiter waiter, MultipathDaemon daemon,
                        LunAttacher.Timeouts timeouts) {
    }

    public SanStack(Host host, Parts parts, FenceSettings fence) {
        SysfsWriter writer = parts.writer();
        DeviceWaiter waiter = parts.waiter();
        MultipathDaemon daemon = parts.daemon();
        LunAttacher.Timeouts timeouts = parts.timeouts();
        this.host = host;
        this.hosts = new ScsiHosts(host.paths(), writer);
        this.devices = new ScsiDevices(host.paths(), writer, host.blockDevices());
        this.attacher = LunAttacher.on(host, devices, waiter, daemon, timeouts);
        this.scanUndo = new ScanUndo(devices, attacher.multipath(), host.blockDevices(), host.paths(), waiter);
        this.targetedScan = new TargetedScan(hosts, devices, scanUndo, attacher.multipath(), host.blockDevices(),
                host.paths(), waiter);
        PersistentReservations reservations = new PersistentReservations(host.scsi(), devices::requirePathOf,
                fence.commandTimeout());
        this.fencing = new LunFencing(reservations, this::pathDevices,
                new TakeoverRule(fence.takeoverAfter(), fence.nanoTime()));
        this.pathRepair = new LunPathRepair(devices, targetedScan, scanUndo, attacher, daemon, timeouts,
                reservations);
    }

    public ScsiHosts hosts() {
        return hosts;
    }

    public ScsiDevices devices() {
        return devices;
    }

    public TargetedScan targetedScan() {
        return targetedScan;
    }

    public LunAttacher attacher() {
        return attacher;
    }

    public ScanUndo scanUndo() {
        return scanUndo;
    }

    public Fencing fencing() {
        return fencing;
    }

    public LunPathRepair pathRepair() {
        return pathRepair;
    }

    /** The sweep of the disks and maps of LUNs that {@code journal} proves were scanned in and nothing needs. */
    public LeftoverLunSweep leftoverSweep(ScanJournal journal) {
        return new LeftoverLunSweep(journal, devices, attacher, host.blockDevices(), host.paths());
    }

    /**
     * The LUN's path devices present now, one per I_T nexus: those recorded at attach and whatever the map holds
     * now (a path that came back after a loss may have a new name), each only while it is there.
     */
    List<LunPath> pathDevices(Attachment attachment) throws IOException {
        AttachedLun lun;
        try {
            lun = recorded(attachment);
        } catch (VolumeException e) {
            throw new IOException(e.getMessage(), e);
        }
        Set<String> names = new LinkedHashSet<>(lun.pathNames());
        if (lun.mapName().isPresent()) {
            Optional<MultipathMap> map = attacher.multipath().maps().byName(lun.mapName().get(), lun.number());
            map.ifPresent(m -> names.addAll(m.slaves()));
        }
        List<LunPath> present = new ArrayList<>();
        for (String name : names) {
            // A name the kernel gave to another LUN since (a path lost and another disk probed) is not ours to use.
            Optional<ScsiDisk> disk = devices.diskNamed(name);
            if (disk.isPresent() && devices.identity(disk.get()).map(i -> i.matches(lun.wwid())).orElse(false)) {
                present.add(new LunPath(disk.get().devicePath(), lun.wwid()));
            }
        }
        return present;
    }

    /**
     * The attachment of a LUN, the same whether attach made it or it was traced from sysfs: detach reads one
     * shape.
     *
     * @param transportDetails what the transport records beside the LUN's own details (its target, ...)
     */
    public static Attachment attachment(String transport, AttachedLun lun, Map<String, String> transportDetails) {
        Map<String, String> details = new LinkedHashMap<>(lun.details());
        details.putAll(transportDetails);
        return new Attachment(transport, lun.device(), lun.number(), lun.wwid().multipathForm(), details);
    }

    public Optional<PathReport> pathHealth(Attachment attachment) throws IOException {
        return attacher.pathHealth(attachment.details(), attachment.device(), attachment.number())
                .map(PathReport::of);
    }

    public void refreshSize(Attachment attachment) throws VolumeException {
        attacher.refreshSize(recorded(attachment));
    }

    /** Takes the attachment's LUN off the node (map, then path devices), timed as the release phase. */
    public void release(Attachment attachment) throws VolumeException {
        Phases.run("release", () -> attacher.release(recorded(attachment)));
    }

    private static AttachedLun recorded(Attachment attachment) throws VolumeException {
        return LunAttacher.recorded(attachment.details(), attachment.device(), attachment.number());
    }
}
