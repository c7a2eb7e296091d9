package dev.blocknode.transport.fc;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.metrics.Phases;
import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.san.AttachedLun;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.SanStack;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Logger;

/**
 * Fibre Channel LUNs. The fabric is already logged in (the HBA driver does that); attaching a volume is
 * finding the remote ports of its target WWPNs, a targeted scan of H:C:T:LUN behind each, then the shared
 * SCSI part ({@link LunAttacher}): wait, verify WWIDs, multipath. Or, with {@code wwids}, using a LUN that
 * is already visible.
 *
 * <p>volume_context keys: {@code targetWWNs} (comma-separated WWPNs, any of 0x / colon / bare spellings)
 * with {@code lun}; or {@code wwids} (comma-separated); optional {@code wwid}, the identity the LUN must have.
 */
public final class FcTransport implements Transport {

    private static final Logger LOG = Logger.getLogger(FcTransport.class.getName());

    public static final String NAME = "fc";

    private final FcPorts ports;
    private final SanStack san;

    public FcTransport(Host host, DeviceWaiter waiter, FenceSettings fence) {
        this(host, SysfsWriter.DIRECT, waiter, MultipathDaemon.of(host.commands(), host.paths().unixSockets()),
                LunAttacher.Timeouts.DEFAULTS, fence);
    }

    public FcTransport(Host host, SysfsWriter writer, DeviceWaiter waiter, MultipathDaemon daemon,
                       LunAttacher.Timeouts timeouts) {
        this(host, writer, waiter, daemon, timeouts, FenceSettings.DEFAULTS);
    }

    public FcTransport(Host host, SysfsWriter writer, DeviceWaiter waiter, MultipathDaemon daemon,
                       LunAttacher.Timeouts timeouts, FenceSettings fence) {
        this.ports = new FcPorts(host.paths());
        this.san = new SanStack(host, writer, waiter, daemon, timeouts, fence);
        PathRepairs.register(NAME, PathRepairs.LUN_PATH);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<String> identifyingKeys() {
        return Set.of(FcVolumeSpec.TARGET_WWNS, FcVolumeSpec.WWIDS);
    }

    @Override
    public void validate(AttachRequest request) throws VolumeException {
        FcVolumeSpec.parse(request);
    }

    @Override
    public Attachment attach(AttachRequest request) throws VolumeException {
        FcVolumeSpec spec = FcVolumeSpec.parse(request);
        AttachedLun lun;
        if (spec.scansTargets()) {
            List<ScsiAddress> addresses = lunAddresses(request.volumeId(), spec);
            scan(request.volumeId(), addresses);
            lun = Phases.time("device_wait",
                    () -> san.attacher().attach(request.volumeId(), addresses, spec.expected()));
        } else {
            lun = san.attacher().attachPresent(request.volumeId(), spec.wwids());
        }
        if (!lun.missing().isEmpty()) {
            LOG.warning(() -> "volume " + request.volumeId() + " attached with " + lun.paths().size()
                    + " path(s); the LUN did not appear at " + lun.missing());
        }
        return attachment(lun);
    }

    /** A LUN whose every path runs through an FC HBA port (fc_host): the paths' hosts say so. */
    @Override
    public Optional<Attachment> attachmentOf(DeviceNumber device) throws VolumeException {
        Optional<AttachedLun> lun = san.attacher().traced(device);
        if (lun.isEmpty() || lun.get().paths().isEmpty()) {
            return Optional.empty();
        }
        try {
            Set<Integer> fcHosts = new HashSet<>();
            ports.hosts().forEach(h -> fcHosts.add(h.host()));
            if (!lun.get().paths().stream().allMatch(p -> fcHosts.contains(p.address().host()))) {
                return Optional.empty();
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the node's FC HBA ports", e);
        }
        return Optional.of(attachment(lun.get()));
    }

    private static Attachment attachment(AttachedLun lun) {
        return SanStack.attachment(NAME, lun, Map.of());
    }

    @Override
    public Optional<PathReport> pathHealth(Attachment attachment) throws IOException {
        return san.pathHealth(attachment);
    }

    @Override
    public void refreshSize(Attachment attachment) throws VolumeException {
        san.refreshSize(attachment);
    }

    @Override
    public Optional<Fencing> fencing() {
        return Optional.of(san.fencing());
    }

    @Override
    public void detach(Attachment attachment) throws VolumeException {
        san.release(attachment);
    }

    @Override
    public void abandon(AttachRequest request) throws VolumeException {
        FcVolumeSpec spec = FcVolumeSpec.parse(request);
        if (!spec.scansTargets()) {
            return; // attached by WWID alone: it scanned nothing in, so there is nothing of its own to take back
        }
        // The LUN's address behind every remote port of the targets, whatever the port's state now (it may
        // have gone down since the scan): what of the LUN is there and held by nobody came from that scan,
        // or from the HBA's own, which the detach of a staged volume removes as well.
        List<ScsiAddress> addresses = new ArrayList<>();
        try {
            for (FcPorts.RemotePort port : ports.remotePorts()) {
                if (spec.targetWwpns().contains(port.portName()) && port.isScsiTarget()) {
                    addresses.add(port.lunAddress(spec.lun().orElseThrow()));
                }
            }
        } catch (IOException e) {
            throw VolumeException.internal("volume " + request.volumeId() + ": cannot read the node's FC ports to"
                    + " undo an interrupted attach", e);
        }
        san.scanUndo().removeUnheld(request.volumeId(), addresses, "the interrupted attach");
    }

    /**
     * H:C:T:LUN behind every usable remote port of the targets: the port is Online, is a SCSI target
     * (scsi_target_id is not -1) with the FCP Target role, and is seen by an Online HBA port. The role counts
     * because the target id does not go with it: the kernel keeps a port's id when the port logs in again
     * without the role (fc_remote_port_rolechg's documentation) and after dev_loss_tmo (roles "unknown",
     * measured in the VM tier). A port whose process login found no target, an array port configured after
     * the node logged in, stays an initiator only until it logs in again (measured there too).
     */
    private List<ScsiAddress> lunAddresses(String volumeId, FcVolumeSpec spec) throws VolumeException {
        List<String> skipped = new ArrayList<>();
        List<ScsiAddress> addresses;
        try {
            addresses = usableAddresses(spec, skipped);
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the node's FC ports", e);
        }
        if (!skipped.isEmpty()) {
            LOG.info(() -> "volume " + volumeId + ": " + String.join("; ", skipped));
        }
        if (addresses.isEmpty()) {
            throw VolumeException.notFound("volume " + volumeId + ": no Online FC remote port with WWPN in "
                    + spec.targetWwpns() + " is reachable from an Online HBA port of this node"
                    + (skipped.isEmpty() ? "" : " (" + String.join("; ", skipped) + ")"));
        }
        return addresses;
    }

    /** The addresses of {@link #lunAddresses}, saying in {@code skipped} why each other port of the targets is not used. */
    private List<ScsiAddress> usableAddresses(FcVolumeSpec spec, List<String> skipped) throws IOException {
        List<ScsiAddress> addresses = new ArrayList<>();
        List<Integer> onlineHosts = new ArrayList<>();
        for (FcPorts.FcHost host : ports.hosts()) {
            if (host.online()) {
                onlineHosts.add(host.host());
            } else {
                skipped.add("host" + host.host() + " is " + host.state());
            }
        }
        for (FcPorts.RemotePort port : ports.remotePorts()) {
            if (!spec.targetWwpns().contains(port.portName())) {
                continue;
            }
            String why = !onlineHosts.contains(port.host()) ? "its HBA host" + port.host() + " is not Online"
                    : !port.online() ? "it is " + port.state()
                    : !port.isScsiTarget() ? "it is not a SCSI target (scsi_target_id -1)"
                    : !port.isFcpTarget() ? "it does not have the FCP Target role (roles: " + port.roles() + ")"
                    : null;
            if (why != null) {
                skipped.add(port.name() + " (0x" + port.portName() + ") skipped: " + why);
                continue;
            }
            ScsiAddress address = port.lunAddress(spec.lun().orElseThrow());
            if (!addresses.contains(address)) {
                addresses.add(address);
            }
        }
        return addresses;
    }

    /**
     * After the stage: the LUN behind every remote port of its targets that is usable now (the stage's own choice of
     * ports), so that a port back from a loss longer than its dev_loss_tmo, whose disk the kernel deleted and, with
     * scsi_mod.scan=manual, never scans back, gets its path again. A volume attached by WWID alone scanned nothing
     * at its stage and is not scanned here either. Under fencing a returned path is registered with this node's key
     * before multipathd takes it ({@link dev.blocknode.transport.san.LunPathRepair}).
     */
    @Override
    public PathRepair repairPaths(AttachRequest request, Attachment attachment) throws VolumeException {
        return repairPaths(request, attachment, Optional.empty());
    }

    @Override
    public PathRepair repairPaths(AttachRequest request, Attachment attachment, Optional<FenceKey> fenceKey)
            throws VolumeException {
        FcVolumeSpec spec = FcVolumeSpec.parse(request);
        if (!spec.scansTargets()) {
            return PathRepair.NONE;
        }
        List<ScsiAddress> addresses;
        try {
            addresses = usableAddresses(spec, new ArrayList<>());
        } catch (IOException e) {
            throw VolumeException.internal("volume " + request.volumeId() + ": cannot read the node's FC ports", e);
        }
        if (addresses.isEmpty()) {
            return PathRepair.waiting("no remote port of its targets is Online");
        }
        return counted(san.pathRepair().repair(request.volumeId(), attachment, addresses, fenceKey));
    }

    @Override
    public boolean mayRepairPaths(AttachRequest request, Attachment attachment) {
        try {
            FcVolumeSpec spec = FcVolumeSpec.parse(request);
            if (!spec.scansTargets()) {
                return false;
            }
            List<ScsiAddress> addresses = usableAddresses(spec, new ArrayList<>());
            // No port Online: the repair reports that it waits (once), and touches nothing.
            return addresses.isEmpty() || san.pathRepair().needed(attachment, addresses);
        } catch (VolumeException | IOException | RuntimeException e) {
            return true;
        }
    }

    private static PathRepair counted(PathRepair repair) {
        PathRepairs.countLunPaths(NAME, repair.restored().size(), repair.wrongLun().size(), repair.failed().size());
        return repair;
    }

    /**
     * A targeted scan of each address that has no disk yet, or whose disk turned out to be stale (see
     * {@link dev.blocknode.transport.san.TargetedScan}); a host that vanished just loses its path.
     */
    private void scan(String volumeId, List<ScsiAddress> addresses) throws VolumeException {
        for (ScsiAddress address : addresses) {
            try {
                if (san.targetedScan().bringIn(volumeId, address)) {
                    LOG.info(() -> "volume " + volumeId + ": scanned " + address);
                }
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": scan of " + address + " failed: " + e.getMessage());
            }
        }
    }
}
