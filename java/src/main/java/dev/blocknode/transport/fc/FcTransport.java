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
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.ContextList;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.san.AttachedLun;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.LeftoverLunSweep;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.SanStack;
import dev.blocknode.transport.san.ScanJournal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
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
 *
 * <p>Every targeted scan is journaled first ({@link ScanJournal}, one entry per target port and LUN), so that the
 * sweep of leftover LUNs ({@link LeftoverLunSweep}) can take away the disks and map of a LUN a stage scanned in and
 * then never recorded; unstage drops the entries with the disks.
 */
public final class FcTransport implements Transport {

    private static final Logger LOG = Logger.getLogger(FcTransport.class.getName());

    public static final String NAME = "fc";
    /** Attachment detail keys, besides the shared SCSI ones: what unstage drops the scan journal's entries of. */
    static final String DETAIL_TARGETS = "targetWwpns";
    static final String DETAIL_LUN = "lun";

    private final FcPorts ports;
    private final SanStack san;
    private final ScanJournal scans;
    /** Per target port WWPN: a stage journals and scans there under it, and the sweep removes under it. */
    private final KeyedLocks<String> targetLocks = new KeyedLocks<>();
    private final FcTargets targets;
    private final FcPathRepair pathRepair;

    public FcTransport(Host host, DeviceWaiter waiter, FenceSettings fence, ScanJournal scans) {
        this(host, SysfsWriter.DIRECT, waiter, MultipathDaemon.of(host.commands(), host.paths().unixSockets()),
                LunAttacher.Timeouts.DEFAULTS, fence, scans);
    }

    public FcTransport(Host host, SysfsWriter writer, DeviceWaiter waiter, MultipathDaemon daemon,
                       LunAttacher.Timeouts timeouts) {
        this(host, writer, waiter, daemon, timeouts, FenceSettings.DEFAULTS);
    }

    public FcTransport(Host host, SysfsWriter writer, DeviceWaiter waiter, MultipathDaemon daemon,
                       LunAttacher.Timeouts timeouts, FenceSettings fence) {
        this(host, writer, waiter, daemon, timeouts, fence, ScanJournal.NONE);
    }

    public FcTransport(Host host, SysfsWriter writer, DeviceWaiter waiter, MultipathDaemon daemon,
                       LunAttacher.Timeouts timeouts, FenceSettings fence, ScanJournal scans) {
        this.ports = new FcPorts(host.paths());
        this.san = new SanStack(host, new SanStack.Parts(writer, waiter, daemon, timeouts), fence);
        this.scans = scans;
        this.targets = new FcTargets(ports, scans);
        this.pathRepair = new FcPathRepair(targets, ports, san, targetLocks, san.leftoverSweep(scans));
        PathRepairs.register(NAME, PathRepairs.LUN_PATH);
        LeftoverLunSweep.register(NAME);
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
    public AttachPlan validate(AttachRequest request) throws VolumeException {
        return new FcAttachPlan(request, FcVolumeSpec.parse(request));
    }

    @Override
    public void check(AttachRequest request, KeyProblems problems) throws VolumeException {
        FcVolumeSpec.read(request, problems);
    }

    @Override
    public Attachment attach(AttachPlan plan) throws VolumeException {
        FcAttachPlan own = AttachPlan.own(FcAttachPlan.class, plan, this);
        AttachRequest request = own.request();
        FcVolumeSpec spec = own.spec();
        AttachedLun lun;
        if (spec.scansTargets()) {
            Map<ScsiAddress, String> reached = lunAddresses(request.volumeId(), spec);
            scan(request.volumeId(), spec.lun().orElseThrow(), reached);
            List<ScsiAddress> addresses = List.copyOf(reached.keySet());
            lun = Phases.time("device_wait",
                    () -> san.attacher().attach(request.volumeId(), addresses, spec.expected()));
        } else {
            lun = san.attacher().attachPresent(request.volumeId(), spec.wwids());
        }
        if (!lun.missing().isEmpty()) {
            LOG.warning(() -> "volume " + request.volumeId() + " attached with " + lun.paths().size()
                    + " path(s); the LUN did not appear at " + lun.missing());
        }
        return spec.scansTargets() ? attachment(lun, spec.targetWwpns(), spec.lun().orElseThrow()) : attachment(lun);
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
            List<String> targets = targetsOf(lun.get());
            if (!targets.isEmpty()) {
                return Optional.of(attachment(lun.get(), targets, lun.get().paths().get(0).address().lun()));
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the node's FC HBA ports", e);
        }
        return Optional.of(attachment(lun.get()));
    }

    /** The WWPNs of the target ports the LUN's paths run through, as the remote ports behind their addresses say. */
    private List<String> targetsOf(AttachedLun lun) throws IOException {
        List<String> targets = new ArrayList<>();
        for (FcPorts.RemotePort port : ports.remotePorts()) {
            boolean carries = lun.paths().stream().anyMatch(p -> p.address().host() == port.host()
                    && p.address().channel() == port.channel() && p.address().target() == port.scsiTargetId());
            if (carries && port.isScsiTarget() && !targets.contains(port.portName())) {
                targets.add(port.portName());
            }
        }
        return targets;
    }

    /** A LUN attached by WWID alone: nothing of it was scanned, so nothing is journaled. */
    private static Attachment attachment(AttachedLun lun) {
        return SanStack.attachment(NAME, lun, Map.of());
    }

    /** A LUN scanned in behind {@code targets}: unstage drops their scan journal entries with its disks. */
    private static Attachment attachment(AttachedLun lun, List<String> targets, long lunNumber) {
        return SanStack.attachment(NAME, lun, Map.of(DETAIL_TARGETS, String.join(",", targets),
                DETAIL_LUN, Long.toString(lunNumber)));
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

    /**
     * After the stage: the LUN behind every remote port of its targets that is usable now, scanned again where the
     * kernel deleted its disk ({@link FcPathRepair}), and the sweep of what blocknode scanned in that no record names.
     */
    @Override
    public Optional<PathRepair> pathRepair() {
        return Optional.of(pathRepair);
    }

    @Override
    public void detach(Attachment attachment) throws VolumeException {
        san.release(attachment);
        String targets = attachment.details().get(DETAIL_TARGETS);
        String lun = attachment.details().get(DETAIL_LUN);
        if (targets == null || lun == null) {
            return; // attached by WWID alone, or recorded before the journal: the sweep drops an entry without disks
        }
        for (String wwpn : ContextList.items(targets)) {
            try (KeyedLocks.Held ignored = targetLocks.lock(wwpn)) {
                scans.forget(FcLeftoverLuns.entry(wwpn, Long.parseLong(lun)));
            } catch (NumberFormatException | IOException e) {
                LOG.warning(() -> "cannot drop the scan journal's entry of LUN " + lun + " behind 0x" + wwpn
                        + " (the sweep drops it): " + e.getMessage());
            }
        }
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
        long lun = spec.lun().orElseThrow();
        List<ScsiAddress> addresses = new ArrayList<>();
        try {
            for (String wwpn : spec.targetWwpns()) {
                addresses.addAll(ports.lunAddresses(wwpn, lun));
            }
        } catch (IOException e) {
            throw VolumeException.internal("volume " + request.volumeId() + ": cannot read the node's FC ports to"
                    + " undo an interrupted attach", e);
        }
        san.scanUndo().removeUnheld(request.volumeId(), addresses, "the interrupted attach");
        // An entry goes only when its target has no disk of the LUN left (the undo leaves one something holds):
        // the sweep may take such a disk away once nothing needs it.
        for (String wwpn : spec.targetWwpns()) {
            try (KeyedLocks.Held ignored = targetLocks.lock(wwpn)) {
                if (ports.lunAddresses(wwpn, lun).stream().noneMatch(this::hasDisk)) {
                    scans.forget(FcLeftoverLuns.entry(wwpn, lun));
                }
            } catch (IOException | UncheckedIOException e) {
                LOG.warning(() -> "volume " + request.volumeId() + ": cannot drop the scan journal's entry of LUN "
                        + lun + " behind 0x" + wwpn + " (the sweep drops it): " + e.getMessage());
            }
        }
    }

    private boolean hasDisk(ScsiAddress address) {
        try {
            return san.devices().diskAt(address).isPresent();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * H:C:T:LUN behind every usable remote port of the targets: the port is Online, is a SCSI target
     * (scsi_target_id is not -1) with the FCP Target role, and is seen by an Online HBA port. The role counts
     * because the target id does not go with it: the kernel keeps a port's id when the port logs in again
     * without the role (fc_remote_port_rolechg's documentation) and after dev_loss_tmo (roles "unknown",
     * measured in the VM tier). A port whose process login found no target, an array port configured after
     * the node logged in, stays an initiator only until it logs in again (measured there too).
     */
    private Map<ScsiAddress, String> lunAddresses(String volumeId, FcVolumeSpec spec) throws VolumeException {
        List<String> skipped = new ArrayList<>();
        Map<ScsiAddress, String> addresses;
        try {
            addresses = targets.usableAddresses(spec, skipped);
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

    /**
     * A targeted scan of each address that has no disk yet, or whose disk turned out to be stale (see
     * {@link dev.blocknode.transport.san.TargetedScan}); a host that vanished just loses its path. Per target port,
     * under its lock: the scan journal's entry first (no entry, no scan), then the scans behind it. The stage's
     * record names the entry before this runs, so a sweep that takes the lock after it reads the record again and
     * leaves the LUN alone, and one that holds it already has removed what it took before this scan looks.
     */
    private void scan(String volumeId, long lun, Map<ScsiAddress, String> reached) throws VolumeException {
        Map<String, List<ScsiAddress>> byTarget = new LinkedHashMap<>();
        reached.forEach((address, wwpn) -> byTarget.computeIfAbsent(wwpn, w -> new ArrayList<>()).add(address));
        for (Map.Entry<String, List<ScsiAddress>> target : byTarget.entrySet()) {
            try (KeyedLocks.Held ignored = targetLocks.lock(target.getKey())) {
                targets.journal(volumeId, target.getKey(), lun);
                for (ScsiAddress address : target.getValue()) {
                    try {
                        if (san.targetedScan().bringIn(volumeId, address)) {
                            LOG.info(() -> "volume " + volumeId + ": scanned " + address);
                        }
                    } catch (IOException e) {
                        LOG.warning(() -> "volume " + volumeId + ": scan of " + address + " failed: "
                                + e.getMessage());
                    }
                }
            }
        }
    }
}
