package dev.blocknode.transport.iscsi;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.metrics.Phases;
import dev.blocknode.multipath.MultipathDaemon;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.SysfsWriter;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.WwidKeys;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.ContextList;
import dev.blocknode.transport.Fencing;
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
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
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

    private static final Duration SESSION_APPEARS = Duration.ofSeconds(10);
    private static final Duration SESSION_GOES = Duration.ofSeconds(10);

    private final IscsiAdm iscsiadm;
    private final NodeRecordFiles records;
    private final IscsiSessions sessions;
    private final SanStack san;
    private final DeviceWaiter waiter;
    private final MultipathDaemon daemon;
    private final KeyedLocks<IscsiPath> sessionLocks = new KeyedLocks<>();
    private final IscsiRepairs pathRepair;
    private final LoginJournal journal;
    private final ScanJournal scans;

    /** {@code repairInterval}: the repair loop's, {@link Duration#ZERO} when there is none. */
    public IscsiTransport(Host host, Path iscsiDatabase, DeviceWaiter waiter, FenceSettings fence,
                          LoginJournal journal, ScanJournal scans, Duration repairInterval) {
        this(host, new IscsiAdm(host.commands()), new NodeRecordFiles(iscsiDatabase), SysfsWriter.DIRECT, waiter,
                MultipathDaemon.of(host.commands(), host.paths().unixSockets()), LunAttacher.Timeouts.DEFAULTS, fence,
                journal, scans, repairInterval, System::nanoTime, PortalProbe.TCP);
    }

    public IscsiTransport(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SysfsWriter writer,
                          DeviceWaiter waiter, MultipathDaemon daemon, LunAttacher.Timeouts timeouts) {
        this(host, iscsiadm, records, writer, waiter, daemon, timeouts, FenceSettings.DEFAULTS);
    }

    public IscsiTransport(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SysfsWriter writer,
                          DeviceWaiter waiter, MultipathDaemon daemon, LunAttacher.Timeouts timeouts,
                          FenceSettings fence) {
        this(host, iscsiadm, records, writer, waiter, daemon, timeouts, fence, LoginJournal.NONE, ScanJournal.NONE,
                Duration.ZERO, System::nanoTime, PortalProbe.ALWAYS);
    }

    public IscsiTransport(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SysfsWriter writer,
                          DeviceWaiter waiter, MultipathDaemon daemon, LunAttacher.Timeouts timeouts,
                          FenceSettings fence, LoginJournal journal) {
        this(host, iscsiadm, records, writer, waiter, daemon, timeouts, fence, journal, ScanJournal.NONE,
                Duration.ZERO, System::nanoTime, PortalProbe.ALWAYS);
    }

    public IscsiTransport(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SysfsWriter writer,
                          DeviceWaiter waiter, MultipathDaemon daemon, LunAttacher.Timeouts timeouts,
                          FenceSettings fence, LoginJournal journal, ScanJournal scans) {
        this(host, iscsiadm, records, writer, waiter, daemon, timeouts, fence, journal, scans, Duration.ZERO,
                System::nanoTime, PortalProbe.ALWAYS);
    }

    /**
     * With the repair loop's interval and the clock the path repair's login back-off is measured on (tests move it by
     * hand).
     */
    IscsiTransport(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SysfsWriter writer, DeviceWaiter waiter,
                   MultipathDaemon daemon, LunAttacher.Timeouts timeouts, FenceSettings fence, LoginJournal journal,
                   ScanJournal scans, Duration repairInterval, LongSupplier nanoTime) {
        this(host, iscsiadm, records, writer, waiter, daemon, timeouts, fence, journal, scans, repairInterval,
                nanoTime, PortalProbe.ALWAYS);
    }

    /**
     * And what tells the path repair a portal answers (the constructors tests use say every portal does: their logins
     * are scripted).
     */
    IscsiTransport(Host host, IscsiAdm iscsiadm, NodeRecordFiles records, SysfsWriter writer, DeviceWaiter waiter,
                   MultipathDaemon daemon, LunAttacher.Timeouts timeouts, FenceSettings fence, LoginJournal journal,
                   ScanJournal scans, Duration repairInterval, LongSupplier nanoTime, PortalProbe portals) {
        this.journal = journal;
        this.scans = scans;
        this.iscsiadm = iscsiadm;
        this.records = records;
        this.sessions = new IscsiSessions(host.paths());
        this.san = new SanStack(host, writer, waiter, daemon, timeouts, fence);
        this.waiter = waiter;
        this.daemon = daemon;
        IscsiInitiator initiator = new IscsiInitiator(sessions, iscsiadm, records, sessionLocks);
        IscsiPathRepair paths = new IscsiPathRepair(initiator, waiter, san, scans, portals, repairInterval, nanoTime);
        PathRepairs.register(NAME, PathRepairs.LUN_PATH);
        PathRepairs.register(NAME, PathRepairs.SESSION);
        OrphanSessionSweep sweep = new OrphanSessionSweep(sessions, iscsiadm, records, sessionLocks, journal,
                repairInterval, nanoTime);
        this.pathRepair = new IscsiRepairs(paths, san.leftoverSweep(scans), sweep, initiator);
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
    public void validate(AttachRequest request) throws VolumeException {
        KeyProblems.requireNone(this, request);
    }

    @Override
    public void check(AttachRequest request, KeyProblems problems) throws VolumeException {
        IscsiVolumeSpec.read(request, problems);
        problems.check(() -> ChapCredentials.from(request.secrets()));
    }

    @Override
    public Attachment attach(AttachRequest request) throws VolumeException {
        IscsiVolumeSpec spec = IscsiVolumeSpec.from(request);
        Optional<ChapCredentials> chap = ChapCredentials.from(request.secrets());
        List<ScsiAddress> addresses = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        boolean authenticationFailed = false;
        List<IscsiPath> failedPaths = new ArrayList<>();
        List<IscsiPath> refusedCredentials = new ArrayList<>();
        List<ScsiAddress> scanned = new ArrayList<>();
        // LunAttacher's rule for using a map; the daemon is asked only when there is a single portal.
        OptionalInt replacementTimeout = ReplacementTimeout.forRecord(spec,
                spec.portals().size() > 1 || daemon.isRunning());
        for (IscsiPath path : spec.paths()) {
            failedPaths.add(path);
            try (KeyedLocks.Held ignored = sessionLocks.lock(path)) {
                IscsiSessions.Session session = ensureSession(path, chap, replacementTimeout);
                ScsiAddress address = session.addressOf(spec.lun());
                // The proof the leftover sweep needs that a disk at this address is blocknode's, durably first.
                scans.record(IscsiLeftoverLuns.entry(path, spec.lun()));
                if (san.targetedScan().bringIn(request.volumeId(), address)) {
                    scanned.add(address);
                    LOG.info(() -> "volume " + request.volumeId() + ": scanned " + address + " on " + path);
                }
                addresses.add(address);
                failedPaths.remove(path);
            } catch (CommandException e) {
                if (IscsiAdm.isAuthenticationFailure(e)) {
                    authenticationFailed = true;
                    refusedCredentials.add(path);
                }
                failures.add(path + ": " + e.getMessage());
            } catch (IOException e) {
                failures.add(path + ": " + e.getMessage());
            }
        }
        // With a session on another portal the stage goes on, and a portal that is down now keeps its node record and
        // its journal entry: the repair loop logs it in with that record (the stage's CHAP settings, kept nowhere
        // else) once it answers, and unstage deletes it with the others. A portal that refused the credentials keeps
        // nothing (its record may hold a wrong password), nor does any portal of an attach that failed.
        forgetFailedPaths(addresses.isEmpty() ? failedPaths : refusedCredentials);
        if (addresses.isEmpty()) {
            String why = String.join("; ", failures);
            if (authenticationFailed) {
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
            undoScans(request.volumeId(), spec, scanned);
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
                forgetScan(path, attachment.details().get(DETAIL_LUN));
                logOutIfUnused(path);
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
     * A portal whose login failed keeps nothing: no session was made, and its record (which may hold a
     * wrong CHAP password) is deleted. Best effort: the login failure is what the caller reports.
     */
    private void forgetFailedPaths(List<IscsiPath> failed) {
        for (IscsiPath path : failed) {
            try (KeyedLocks.Held ignored = sessionLocks.lock(path)) {
                if (sessions.find(path).isEmpty()) {
                    iscsiadm.deleteNodeRecord(path);
                    journal.forget(path);
                }
            } catch (IOException e) {
                LOG.warning(() -> "cannot delete the node record of " + path + " after its failed login: "
                        + e.getMessage());
            }
        }
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
                forgetScanIfGone(path, spec.lun());
                logOutIfUnused(path);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": cannot log out of " + path + " after the refused attach: "
                        + e.getMessage());
            }
        }
    }

    /**
     * The live session of a path, logging in first when there is none. Called with the path's lock held.
     * A live session is used as it is: its settings (replacement timeout included) are those of the login
     * that made it, whichever volume that was.
     */
    private IscsiSessions.Session ensureSession(IscsiPath path, Optional<ChapCredentials> chap,
                                                OptionalInt replacementTimeout) throws IOException {
        Optional<IscsiSessions.Session> live = sessions.find(path);
        if (live.isPresent()) {
            return live.get();
        }
        // The proof the orphan sweep needs that this node record and session are blocknode's, durably first.
        journal.record(path);
        iscsiadm.createNodeRecord(path);
        // One write of the record file for every setting of the login, secret or not: CHAP must not go
        // through iscsiadm's argv, and the rest then costs no extra iscsiadm run.
        Map<String, String> settings = new HashMap<>(chap.map(ChapCredentials::recordSettings)
                .orElse(Map.of(ChapCredentials.AUTH_METHOD, "None")));
        settings.putAll(NodeRecordFiles.MANUAL);
        replacementTimeout.ifPresent(seconds -> settings.put(ReplacementTimeout.SETTING, Integer.toString(seconds)));
        records.writeSettings(path, settings);
        Phases.run("login", () -> iscsiadm.login(path));
        LOG.info(() -> "logged in to " + path);
        return waiter.within(SESSION_APPEARS, "the iSCSI session of " + path + " in sysfs",
                () -> sessions.find(path));
    }

    /**
     * After a release that took every disk of the LUN away: its scan journal entry through {@code path} goes too. A
     * record without the LUN's number (older than it) leaves the entry to the sweep, which drops an entry whose target
     * has no disk at its LUN. Called with the path's lock held.
     */
    private void forgetScan(IscsiPath path, String lun) {
        try {
            if (lun != null) {
                scans.forget(IscsiLeftoverLuns.entry(path, Long.parseLong(lun)));
            }
        } catch (NumberFormatException | IOException e) {
            LOG.warning(() -> "cannot drop the scan journal's entry of LUN " + lun + " of " + path + " (the sweep drops"
                    + " it): " + e.getMessage());
        }
    }

    /**
     * After an undo, which leaves a disk something holds: the scan journal entry goes only when the LUN has no disk
     * behind the path any more, so that the sweep may take away a disk that stayed once nothing needs it. Called with
     * the path's lock held.
     */
    private void forgetScanIfGone(IscsiPath path, long lun) throws IOException {
        Optional<IscsiSessions.Session> session = sessions.find(path);
        if (session.isPresent()) {
            if (san.devices().diskAt(session.get().addressOf(lun)).isPresent()) {
                return;
            }
        }
        scans.forget(IscsiLeftoverLuns.entry(path, lun));
    }

    /** Logs out only when the session carries no LUN device any more; another volume may still use it. */
    private void logOutIfUnused(IscsiPath path) throws IOException {
        Optional<IscsiSessions.Session> session = sessions.find(path);
        if (session.isPresent()) {
            List<String> remaining = sessions.devices(session.get());
            if (!remaining.isEmpty()) {
                LOG.info(() -> "keeping the session of " + path + ": it still carries " + remaining);
                return;
            }
            Phases.run("logout", () -> iscsiadm.logout(path));
            // Measured in the VM tier: with iscsid down, iscsiadm reports a logout that did not happen. The node
            // record stays until the session is gone (iscsiadm would refuse it), and the caller hears of it. Only the
            // session's own entry is looked at, not every session of the node: its number is never another session's.
            int number = session.get().number();
            waiter.within(SESSION_GOES, "session" + number + " of " + path + " to end after iscsiadm's logout (is iscsid"
                    + " running?)", () -> sessions.ended(number) ? Optional.of(Boolean.TRUE) : Optional.empty());
            LOG.info(() -> "logged out of " + path);
        } else if (records.find(path).isEmpty()) {
            // No session and no record: another volume's unstage logged out and deleted it (a drain unstages the
            // volumes of one target at once). An iscsiadm run here would cost a process and the database's write
            // lock, which every stage's walk waits on, for nothing.
            journal.forget(path);
            return;
        }
        iscsiadm.deleteNodeRecord(path);
        journal.forget(path);
    }
}
