package dev.blocknode.transport.iscsi;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.metrics.Phases;
import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.scsi.Wwid;
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
import dev.blocknode.transport.WwidKeys;
import dev.blocknode.transport.san.AttachedLun;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.LeftoverLunSweep;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.SanStack;
import dev.blocknode.transport.san.ScanJournal;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * iSCSI LUNs. Per portal: a node record made by hand (manual startup, manual scan, CHAP written into the
 * record file), one login shared by every volume of that target, a targeted scan of H:C:T:LUN on the
 * session's SCSI host. Then the shared SCSI part ({@link LunAttacher}): wait for the disks, verify their
 * WWIDs, multipath. Detaching releases the map and the path devices, then logs out of each session that
 * carries no other LUN any more (decided from sysfs, so it is right after a restart too).
 */
public final class IscsiTransport implements Transport {

    private static final Logger LOG = Logger.getLogger(IscsiTransport.class.getName());

    public static final String NAME = "iscsi";
    /** Attachment detail keys, besides the shared SCSI ones. */
    static final String DETAIL_IQN = "iqn";
    static final String DETAIL_PORTALS = "portals";
    static final String DETAIL_IFACE = "iface";
    static final String DETAIL_LUN = "lun";

    private final IscsiSessions sessions;
    private final SanStack san;
    private final MultipathDaemon daemon;
    private final KeyedLocks<IscsiPath> sessionLocks = new KeyedLocks<>();
    private final IscsiRepairs pathRepair;
    private final IscsiLogins logins;

    /** {@code repairInterval}: the repair loop's, {@link Duration#ZERO} when there is none. */
    public IscsiTransport(Host host, Path iscsiDatabase, DeviceWaiter waiter, FenceSettings fence,
                          LoginJournal journal, ScanJournal scans, Duration repairInterval) {
        this(over(host, new IscsiAdm(host.commands()), new NodeRecordFiles(iscsiDatabase), SysfsWriter.DIRECT, waiter,
                MultipathDaemon.of(host.commands(), host.paths().unixSockets()), LunAttacher.Timeouts.DEFAULTS)
                .fence(fence).journals(journal, scans).repairInterval(repairInterval).portals(PortalProbe.TCP));
    }

    public IscsiTransport(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SysfsWriter writer,
                          DeviceWaiter waiter, MultipathDaemon daemon, LunAttacher.Timeouts timeouts) {
        this(over(host, iscsiadm, records, writer, waiter, daemon, timeouts));
    }

    /**
     * A transport over the given tools (tests give fakes), and, unless the builder is told otherwise, the default
     * fencing settings, no journals, no repair loop, the system clock, and every portal taken to answer (tests script
     * their logins).
     */
    public static Builder over(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SysfsWriter writer,
                               DeviceWaiter waiter, MultipathDaemon daemon, LunAttacher.Timeouts timeouts) {
        return new Builder(host, iscsiadm, records, new SanStack.Parts(writer, waiter, daemon, timeouts));
    }

    /** What a transport is built with besides its tools; each one said at most once, before {@link #build}. */
    public static final class Builder {
        private final Host host;
        private final IscsiAdm iscsiadm;
        private final NodeRecordFiles records;
        private final SanStack.Parts san;
        private FenceSettings fence = FenceSettings.DEFAULTS;
        private LoginJournal journal = LoginJournal.NONE;
        private ScanJournal scans = ScanJournal.NONE;
        private Duration repairInterval = Duration.ZERO;
        private LongSupplier nanoTime = System::nanoTime;
        private PortalProbe portals = PortalProbe.ALWAYS;

        private Builder(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SanStack.Parts san) {
            this.host = host;
            this.iscsiadm = iscsiadm;
            this.records = records;
            this.san = san;
        }

        public Builder fence(FenceSettings settings) {
            this.fence = settings;
            return this;
        }

        /** Where what it logs in to and scans in is journaled for the sweeps. */
        public Builder journals(LoginJournal logins, ScanJournal scanned) {
            this.journal = logins;
            this.scans = scanned;
            return this;
        }

        /** The repair loop's interval ({@link Duration#ZERO}: no loop), which spaces the repair's retries. */
        public Builder repairInterval(Duration interval) {
            this.repairInterval = interval;
            return this;
        }

        /** The clock the path repair's login back-off is measured on (tests move it by hand). */
        Builder clock(LongSupplier clock) {
            this.nanoTime = clock;
            return this;
        }

        /** What tells the path repair a portal answers. */
        Builder portals(PortalProbe probe) {
            this.portals = probe;
            return this;
        }

        public IscsiTransport build() {
            return new IscsiTransport(this);
        }
    }

    private IscsiTransport(Builder built) {
        this.sessions = new IscsiSessions(built.host.paths());
        this.san = new SanStack(built.host, built.san, built.fence);
        this.daemon = built.san.daemon();
        IscsiInitiator initiator = new IscsiInitiator(sessions, built.iscsiadm, built.records, sessionLocks);
        IscsiPathRepair paths = new IscsiPathRepair(initiator, built.san.waiter(), san, built.scans, built.portals,
                built.repairInterval, built.nanoTime);
        PathRepairs.register(NAME, PathRepairs.LUN_PATH);
        PathRepairs.register(NAME, PathRepairs.SESSION);
        OrphanSessionSweep sweep = new OrphanSessionSweep(sessions, built.iscsiadm, built.records, sessionLocks,
                built.journal, built.repairInterval, built.nanoTime);
        this.pathRepair = new IscsiRepairs(paths, san.leftoverSweep(built.scans), sweep, initiator);
        this.logins = new IscsiLogins(initiator, built.journal, built.scans, built.san.waiter(), san);
        LeftoverLunSweep.register(NAME);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<String> identifyingKeys() {
        return Set.of(IscsiVolumeSpec.IQN, IscsiVolumeSpec.TARGET_PORTAL);
    }

    @Override
    public AttachPlan validate(AttachRequest request) throws VolumeException {
        return KeyProblems.parsed(problems -> IscsiAttachPlan.read(request, problems));
    }

    @Override
    public void check(AttachRequest request, KeyProblems problems) throws VolumeException {
        IscsiAttachPlan.read(request, problems);
    }

    @Override
    public Attachment attach(AttachPlan plan) throws VolumeException {
        IscsiAttachPlan own = AttachPlan.own(IscsiAttachPlan.class, plan, this);
        AttachRequest request = own.request();
        IscsiVolumeSpec spec = own.spec();
        Optional<ChapCredentials> chap = own.chap();
        // LunAttacher's rule for using a map; the daemon is asked only when there is a single portal.
        OptionalInt replacementTimeout = ReplacementTimeout.forRecord(spec,
                spec.portals().size() > 1 || daemon.isRunning());
        IscsiLogins.Round round = logins.logInAll(request.volumeId(), spec, chap, replacementTimeout);
        List<ScsiAddress> addresses = round.addresses();
        List<String> failures = round.failures();
        // With a session on another portal the stage goes on, and a portal that is down now keeps its node record and
        // its journal entry: the repair loop logs it in with that record (the stage's CHAP settings, kept nowhere
        // else) once it answers, and unstage deletes it with the others. A portal that refused the credentials keeps
        // nothing (its record may hold a wrong password), nor does any portal of an attach that failed.
        logins.forgetFailedPaths(addresses.isEmpty() ? round.failedPaths() : round.refusedCredentials());
        if (addresses.isEmpty()) {
            String why = String.join("; ", failures);
            if (round.authenticationFailed()) {
                throw VolumeException.precondition("volume " + request.volumeId() + ": CHAP authentication to "
                        + spec.iqn() + " failed on every portal; check the NodeStage secrets (" + why + ")");
            }
            throw VolumeException.internal("volume " + request.volumeId() + ": no session to " + spec.iqn()
                    + " could be established (" + why + ")", null);
        }
        if (!failures.isEmpty()) {
            LOG.warning(() -> "volume " + request.volumeId() + ": attaching with " + addresses.size() + " of "
                    + spec.paths().size() + " portals; " + String.join("; ", failures));
        }
        List<Wwid> expected = new ArrayList<>();
        if (spec.wwid().isPresent()) {
            expected.add(WwidKeys.one(IscsiVolumeSpec.WWID, spec.wwid().get())); // checked by from(): cannot fail
        }
        AttachedLun lun;
        try {
            lun = Phases.time("device_wait", () -> san.attacher().attach(request.volumeId(), addresses, expected));
        } catch (VolumeException refused) {
            undoScans(request.volumeId(), spec, round.scanned());
            throw refused;
        }
        return attachment(lun, spec.iqn(), spec.portals(), spec.iface(), spec.lun());
    }

    /**
     * A LUN whose paths run through iSCSI sessions: the sessions on the paths' SCSI hosts give the target,
     * its portals and the interface, as the volume's context gave them to attach. Sessions of another
     * target on those hosts cannot exist (a session is its own SCSI host).
     */
    @Override
    public Optional<Attachment> attachmentOf(DeviceNumber device) throws VolumeException {
        Optional<AttachedLun> lun = san.attacher().traced(device);
        if (lun.isEmpty() || lun.get().paths().isEmpty()) {
            return Optional.empty();
        }
        Set<Integer> pathHosts = new HashSet<>();
        lun.get().paths().forEach(p -> pathHosts.add(p.address().host()));
        List<IscsiSessions.Session> carrying = new ArrayList<>();
        try {
            for (IscsiSessions.Session session : sessions.all()) {
                if (pathHosts.contains(session.host())) {
                    carrying.add(session);
                }
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the node's iSCSI sessions", e);
        }
        if (carrying.isEmpty()) {
            return Optional.empty();
        }
        IscsiSessions.Session first = carrying.get(0);
        List<Portal> portals = carrying.stream()
                .filter(s -> s.iqn().equals(first.iqn()) && s.iface().equals(first.iface()))
                .map(IscsiSessions.Session::portal).distinct().toList();
        if (portals.size() < carrying.size()) {
            LOG.warning(() -> "the paths of LUN " + lun.get().wwid() + " run through sessions of several targets or "
                    + "interfaces " + carrying + "; releasing it as " + first.iqn() + " on " + first.iface());
        }
        return Optional.of(attachment(lun.get(), first.iqn(), portals, first.iface(),
                lun.get().paths().get(0).address().lun()));
    }

    /** The LUN's attachment with the target it was reached through, which detach logs out of. */
    private static Attachment attachment(AttachedLun lun, String iqn, List<Portal> portals, String iface,
                                         long lunNumber) {
        return SanStack.attachment(NAME, lun, Map.of(
                DETAIL_IQN, iqn,
                DETAIL_PORTALS, String.join(",", portals.stream().map(Portal::toString).toList()),
                DETAIL_IFACE, iface,
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
     * After the stage: each portal of the volume whose session is gone is logged in again with its node record, and
     * the LUN's path on it scanned, checked and given to multipathd ({@link IscsiRepairs}); a session iscsid is
     * recovering is left to it, and nothing is ever logged out.
     */
    @Override
    public Optional<PathRepair> pathRepair() {
        return Optional.of(pathRepair);
    }

    @Override
    public void detach(Attachment attachment) throws VolumeException {
        san.release(attachment);
        String iqn = attachment.details().get(DETAIL_IQN);
        String portals = attachment.details().get(DETAIL_PORTALS);
        if (iqn == null || portals == null) {
            throw VolumeException.internal("the staging record lacks the iSCSI target of device "
                    + attachment.device() + "; its sessions were left logged in", null);
        }
        String iface = attachment.details().getOrDefault(DETAIL_IFACE, IscsiPath.DEFAULT_IFACE);
        List<String> failures = new ArrayList<>();
        for (String portal : ContextList.items(portals)) {
            IscsiPath path;
            try {
                path = new IscsiPath(iqn, Portal.parse(portal), iface);
            } catch (IllegalArgumentException notATarget) {
                // A record is read back as untrusted: nothing of it reaches iscsiadm unless it is a target's name.
                failures.add("the staging record's iSCSI target: " + notATarget.getMessage());
                continue;
            }
            try (KeyedLocks.Held ignored = sessionLocks.lock(path)) {
                logins.forgetScan(path, attachment.details().get(DETAIL_LUN));
                logins.logOutIfUnused(path);
            } catch (IOException e) {
                failures.add(path + ": " + e.getMessage());
            }
        }
        if (!failures.isEmpty()) {
            throw VolumeException.internal("the LUN of device " + attachment.device() + " is released, but "
                    + "logging out failed: " + String.join("; ", failures), null);
        }
    }

    /**
     * An attach cut short may have logged in, scanned the LUN in and let multipathd build a map: the LUN's
     * disks on the target's live sessions are taken away as after a refused attach (only what nothing
     * holds), and sessions left without LUNs are logged out.
     */
    @Override
    public void abandon(AttachRequest request) throws VolumeException {
        IscsiVolumeSpec spec = IscsiVolumeSpec.from(request);
        List<ScsiAddress> present = new ArrayList<>();
        for (IscsiPath path : spec.paths()) {
            try (KeyedLocks.Held ignored = sessionLocks.lock(path)) {
                Optional<IscsiSessions.Session> session = sessions.find(path);
                if (session.isPresent()) {
                    present.add(session.get().addressOf(spec.lun()));
                }
            } catch (IOException e) {
                throw VolumeException.internal("volume " + request.volumeId() + ": cannot inspect the session of "
                        + path + " to undo an interrupted attach", e);
            }
        }
        undoScans(request.volumeId(), spec, present);
    }

    /**
     * A refused attach (wrong WWID, paths that disagree, no map) must not leave the LUN on the node: the
     * disks this call scanned in are deleted unless something holds them, then sessions that carry no
     * other LUN are logged out. Best effort: the refusal is what the caller reports.
     */
    private void undoScans(String volumeId, IscsiVolumeSpec spec, List<ScsiAddress> scanned) {
        san.scanUndo().removeUnheld(volumeId, scanned, "the refused or interrupted attach");
        for (IscsiPath path : spec.paths()) {
            try (KeyedLocks.Held ignored = sessionLocks.lock(path)) {
                logins.forgetScanIfGone(path, spec.lun());
                logins.logOutIfUnused(path);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": cannot log out of " + path + " after the refused attach: "
                        + e.getMessage());
            }
        }
    }
}
