package dev.blocknode.transport.iscsi;

import dev.blocknode.metrics.PathRepairs;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.WaitTimeoutException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.RetryBackoff;
import dev.blocknode.transport.san.AttachedLun;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.transport.san.SanStack;
import dev.blocknode.transport.san.ScanJournal;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * Brings back the paths of a staged iSCSI volume whose session is gone (killed, logged out by someone, lost with
 * iscsid): the portal is logged in again with its node record as the stage left it (CHAP included, so no secret
 * goes through argv or a log, and none is needed from the CO), then {@link dev.blocknode.transport.san.LunPathRepair}
 * does the rest on the session's H:C:T:LUN: a targeted scan of this LUN only, the WWID checked, multipathd given the
 * disk.
 *
 * <p>What it leaves alone, on purpose:
 * <ul>
 *   <li>a session that exists but is not LOGGED_IN (FAILED, REOPEN): iscsid is recovering it and fails its I/O up to
 *       dm-multipath after replacement_timeout; logging it out would delete its disks under the map, which is how a
 *       peer's self-healing turned a network outage into a read-only filesystem. It is reported, never touched;</li>
 *   <li>a volume none of whose paths serves while every portal still has its session (every portal down, iscsid
 *       retrying): nothing is logged in, scanned or removed; it waits and reports, as for FC;</li>
 *   <li>a portal without a node record (deleted by hand): the stage's CHAP secrets are not kept, so no record is made
 *       up; re-staging the volume makes it again.</li>
 * </ul>
 *
 * <p>A volume none of whose paths serves because its sessions are gone (every one killed or logged out behind the
 * plugin's back) is repaired, not left waiting: nothing would ever bring those sessions back, while its map, held
 * open by the mount, queues I/O for as long as no_path_retry allows. Logging in and scanning exactly the volume's
 * LUN on the new sessions takes nothing away, and each disk's WWID is checked before multipathd gets it
 * ({@link dev.blocknode.transport.san.LunPathRepair#repairOnLiveConnections}).
 *
 * <p>One login serves every volume of the target: the repair loop takes volumes one at a time, and the second volume
 * of a target finds the session the first one made. A login that failed is not tried again for that target and portal
 * for a growing while ({@link #LOGIN_BACKOFF_FIRST} doubling up to {@link #LOGIN_BACKOFF_MAX}, a {@link RetryBackoff}), whichever volume
 * asks: the repair loop's own back-off is per volume, and a portal that refuses logins would otherwise cost one
 * login timeout per volume of its target on every pass. A portal that does not even accept a TCP connection
 * ({@link PortalProbe}, asked once per portal for half an interval whichever volume asks) is not logged in to at all:
 * the volume waits, neither back-off grows, and the first pass after the portal answers logs it in, however long it
 * was down. Only a portal whose own iface is "default" is asked: a session bound to another iface leaves by another
 * route than the probe's.
 */
final class IscsiPathRepair {

    private static final Logger LOG = Logger.getLogger(IscsiPathRepair.class.getName());

    static final Duration LOGIN_BACKOFF_FIRST = Duration.ofSeconds(30);
    static final Duration LOGIN_BACKOFF_MAX = Duration.ofMinutes(16);
    private static final Duration SESSION_APPEARS = Duration.ofSeconds(10);

    private final IscsiSessions sessions;
    private final IscsiAdm iscsiadm;
    private final NodeRecordFiles records;
    private final DeviceWaiter waiter;
    private final SanStack san;
    private final KeyedLocks<IscsiPath> sessionLocks;
    private final RetryBackoff<IscsiPath> failedLogins;
    private final ScanJournal scans;
    private final PortalProbe portals;
    private final LongSupplier nanoTime;
    /** Portals that did not answer, and until when (nanoTime) that answer stands. */
    private final Map<Portal, Long> silentUntil = new ConcurrentHashMap<>();
    private final Duration silentKept;

    /**
     * {@code repairInterval} is the repair loop's ({@link Duration#ZERO} when there is none): a failed login is tried
     * again one interval later at the latest, and a portal's silence is asked once per pass.
     */
    IscsiPathRepair(IscsiInitiator initiator, DeviceWaiter waiter, SanStack san, ScanJournal scans,
                    PortalProbe portals, Duration repairInterval, LongSupplier nanoTime) {
        this.scans = scans;
        this.portals = portals;
        this.nanoTime = nanoTime;
        this.sessions = initiator.sessions();
        this.iscsiadm = initiator.iscsiadm();
        this.records = initiator.records();
        this.waiter = waiter;
        this.san = san;
        this.sessionLocks = initiator.sessionLocks();
        this.failedLogins = new RetryBackoff<>(LOGIN_BACKOFF_FIRST, LOGIN_BACKOFF_MAX, repairInterval, nanoTime);
        // once per pass, for every volume of the portal's targets
        this.silentKept = (repairInterval.isZero() ? LOGIN_BACKOFF_FIRST : repairInterval).dividedBy(2);
    }

    /** The volume's portals as the kernel has them now: a session that serves, one iscsid recovers, or none. */
    private record Sessions(Map<IscsiPath, ScsiAddress> serving, List<String> recovering, List<IscsiPath> gone) {
    }

    private Sessions look(IscsiVolumeSpec spec) throws IOException {
        Map<IscsiPath, ScsiAddress> serving = new LinkedHashMap<>();
        List<String> recovering = new ArrayList<>();
        List<IscsiPath> gone = new ArrayList<>();
        // One listing for all the volume's portals (they share its target), not one per portal.
        List<IscsiSessions.Session> ofTarget = sessions.ofTarget(spec.iqn());
        for (IscsiPath path : spec.paths()) {
            Optional<IscsiSessions.Session> session = ofTarget.stream().filter(s -> s.serves(path)).findFirst();
            if (session.isEmpty()) {
                gone.add(path);
                continue;
            }
            String state = sessions.state(session.get());
            if (!session.get().bound()) {
                // Being logged out right now: gone at the next pass, and logged in again then.
                recovering.add(path.portal() + " (session" + session.get().number() + " " + state
                        + ", being torn down)");
            } else if (IscsiSessions.LOGGED_IN.equals(state)) {
                serving.put(path, session.get().addressOf(spec.lun()));
            } else {
                recovering.add(path.portal() + " (session" + session.get().number() + " " + state + ")");
            }
        }
        return new Sessions(serving, recovering, gone);
    }

    /** Whether {@link #repair} could do or report anything: a portal without a serving session, or a path to add. */
    boolean needed(IscsiVolumeSpec spec, Attachment attachment) throws IOException, VolumeException {
        Sessions now = look(spec);
        if (!now.gone().isEmpty() || !now.recovering().isEmpty()) {
            return mapped(attachment);
        }
        return san.pathRepair().needed(attachment, List.copyOf(now.serving().values()));
    }

    /**
     * Repairs the volume's paths; {@code fenceKey} (the staging record's key of a fenced volume) has each disk the
     * repair brings back registered with the key the LUN's reservation holds before multipathd takes it, and none
     * added unless this node's tag holds the reservation, read through a path of the map that serves or, when none
     * does (every session was gone), through the new sessions' disks themselves (PERSISTENT RESERVE IN needs no
     * registration). A LUN reserved by another tag, not reserved at all, or whose reservation cannot be read gets no
     * path back: each disk is reported failed and left outside the map, so a node fenced out never regains write
     * access by repairing (docs/design/fencing.md, "A path that returns").
     */
    RepairedPaths repair(String volumeId, IscsiVolumeSpec spec, Attachment attachment, Optional<FenceKey> fenceKey)
            throws VolumeException {
        if (!mapped(attachment)) {
            return RepairedPaths.NONE; // one path, no map: a new session's disk could not take the old one's place
        }
        List<KeyedLocks.Held> held = new ArrayList<>();
        try {
            Sessions before = look(spec);
            Optional<PathReport> health = san.pathHealth(attachment);
            boolean noneServes = health.isPresent() && health.get().serving() == 0;
            if (noneServes && before.gone().isEmpty()) {
                return RepairedPaths.waiting("no path of its multipath map serves I/O and every portal still has its"
                        + " session; nothing is logged in, scanned or removed until a path serves");
            }
            if (noneServes) {
                warnNoneServes(volumeId, spec, before);
            }
            List<String> failed = new ArrayList<>();
            List<String> silent = new ArrayList<>();
            Map<IscsiPath, ScsiAddress> serving = new LinkedHashMap<>(before.serving());
            loginGone(volumeId, spec, before.gone(), held, new Logins(serving, failed, silent));
            journalScans(spec, serving.keySet());
            List<ScsiAddress> addresses = List.copyOf(serving.values());
            RepairedPaths lunRepair = serving.isEmpty() ? RepairedPaths.NONE
                    : noneServes ? san.pathRepair().repairOnLiveConnections(volumeId, attachment, addresses, fenceKey)
                    : san.pathRepair().repair(volumeId, attachment, addresses, fenceKey);
            PathRepairs.countLunPaths(IscsiTransport.NAME, lunRepair.restored().size(), lunRepair.wrongLun().size(),
                    lunRepair.failed().size());
            if (lunRepair.waiting().isPresent()) {
                return lunRepair;
            }
            List<String> allFailed = new ArrayList<>(failed);
            allFailed.addAll(lunRepair.failed());
            if (!lunRepair.actedOn() && allFailed.isEmpty()) {
                Optional<RepairedPaths> waits = waitingFor(silent, before.recovering());
                if (waits.isPresent()) {
                    return waits.get();
                }
            }
            Optional<Map<String, String>> record = lunRepair.attachment()
                    .map(details -> withoutGoneSessions(details, attachment, spec));
            return new RepairedPaths(lunRepair.restored(), lunRepair.wrongLun(), allFailed, Optional.empty(), record);
        } catch (InterruptedIOException e) {
            Thread.currentThread().interrupt();
            throw VolumeException.internal("volume " + volumeId + ": path repair interrupted", e);
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the iSCSI sessions of "
                    + spec.iqn() + " to repair its paths", e);
        } finally {
            for (int i = held.size() - 1; i >= 0; i--) {
                held.get(i).close();
            }
        }
    }

    private static void warnNoneServes(String volumeId, IscsiVolumeSpec spec, Sessions before) {
        LOG.warning(() -> "volume " + volumeId + ": no path of its multipath map serves I/O and "
                + before.gone().size() + " of its " + spec.paths().size() + " portal(s) have no session: they"
                + " are logged in again (each unless its last login failed a short while ago) and the LUN"
                + " scanned on them (nothing is logged out or removed)");
    }

    /** The repair may scan the LUN on any of the paths: the proof the leftover sweep needs, durably first. */
    private void journalScans(IscsiVolumeSpec spec, Set<IscsiPath> paths) throws IOException {
        for (IscsiPath path : paths) {
            scans.record(IscsiLeftoverLuns.entry(path, spec.lun()));
        }
    }

    /** What the logins of the portals without a session came to. */
    private record Logins(Map<IscsiPath, ScsiAddress> serving, List<String> failed, List<String> silent) {
    }

    /**
     * Logs in again at each portal of the volume that has no session, each path's lock taken and added to
     * {@code held} (held to the end of the repair: no unstage of another volume logs it out unscanned).
     */
    private void loginGone(String volumeId, IscsiVolumeSpec spec, List<IscsiPath> gone, List<KeyedLocks.Held> held,
                           Logins logins) throws IOException {
        // In the leftover sweep's lock order (its entries' order), which holds several of these too.
        List<IscsiPath> ordered = gone.stream()
                .sorted(Comparator.comparing(p -> IscsiLeftoverLuns.entry(p, spec.lun()).orderKey())).toList();
        for (IscsiPath path : ordered) {
            held.add(sessionLocks.lock(path));
            Optional<ScsiAddress> address = loginAgain(volumeId, path, spec.lun());
            if (address.isPresent()) {
                logins.serving().put(path, address.get());
            } else if (silentUntil.containsKey(path.portal())) {
                logins.silent().add(path.portal().toString());
            } else {
                logins.failed().add(path.portal() + ": " + failedLogins.lastFailure(path).orElse("not logged in"));
            }
        }
    }

    /** Why a repair that did and failed nothing waits: portals that answer no TCP connection, or iscsid's recovery. */
    private static Optional<RepairedPaths> waitingFor(List<String> silent, List<String> recovering) {
        if (!silent.isEmpty()) {
            return Optional.of(RepairedPaths.waiting("the portal(s) " + String.join(", ", silent) + " accept no TCP"
                    + " connection (within " + PortalProbe.TIMEOUT.toSeconds() + " s): logged in again once they do"));
        }
        if (!recovering.isEmpty()) {
            return Optional.of(RepairedPaths.waiting("iSCSI session(s) at " + String.join(", ", recovering)
                    + " are left to iscsid's own recovery (replacement_timeout); the repair never logs a session"
                    + " out"));
        }
        return Optional.empty();
    }

    private static boolean mapped(Attachment attachment) throws VolumeException {
        return LunAttacher.recorded(attachment.details(), attachment.device(), attachment.number()).mapName()
                .isPresent();
    }

    /**
     * Logs {@code path} in again with its node record, unless its last login failed a short while ago; called with
     * the path's lock held. Returns the LUN's address on the new session, empty when there is none (why is in
     * {@link #failedLogins}).
     */
    private Optional<ScsiAddress> loginAgain(String volumeId, IscsiPath path, long lun) throws IOException {
        Optional<IscsiSessions.Session> live = sessions.find(path);
        if (live.isPresent()) {
            // Another volume of the target logged it in meanwhile: one session serves all of them.
            return Optional.of(live.get().addressOf(lun));
        }
        if (failedLogins.pending(path).isPresent() || !answers(path)) {
            return Optional.empty();
        }
        if (records.find(path).isEmpty()) {
            return loginFailed(path, "no node record to log in with (deleted outside blocknode); the stage's CHAP"
                    + " secrets are not kept, so none is made up: re-staging the volume makes it again");
        }
        try {
            iscsiadm.login(path);
            IscsiSessions.Session session = waiter.within(SESSION_APPEARS, "the iSCSI session of " + path
                    + " in sysfs", () -> sessions.find(path));
            failedLogins.succeeded(path);
            PathRepairs.count(IscsiTransport.NAME, PathRepairs.SESSION, PathRepairs.RESTORED, 1);
            LOG.info(() -> "volume " + volumeId + ": logged in again to " + path + " (its session was gone): session"
                    + session.number() + " on host" + session.host());
            return Optional.of(session.addressOf(lun));
        } catch (WaitTimeoutException e) {
            return loginFailed(path, "logged in, but no session appeared in sysfs within "
                    + SESSION_APPEARS.toSeconds() + " s");
        } catch (CommandException e) {
            return loginFailed(path, "the login failed: " + e.getMessage());
        }
    }

    /**
     * Whether a login to {@code path} could tell anything now: its portal accepts a TCP connection (or is not asked:
     * a session bound to another iface). A portal that did not answer is in {@link #silentUntil} and not asked again
     * for half an interval, whichever volume of its targets asks; one that answers is taken out.
     */
    private boolean answers(IscsiPath path) {
        if (!IscsiPath.DEFAULT_IFACE.equals(path.iface())) {
            return true;
        }
        Long until = silentUntil.get(path.portal());
        long now = nanoTime.getAsLong();
        if (until != null && now - until < 0) {
            return false;
        }
        if (portals.answers(path.portal())) {
            silentUntil.remove(path.portal());
            return true;
        }
        silentUntil.put(path.portal(), nanoTime.getAsLong() + silentKept.toNanos());
        return false;
    }

    private Optional<ScsiAddress> loginFailed(IscsiPath path, String why) {
        PathRepairs.count(IscsiTransport.NAME, PathRepairs.SESSION, PathRepairs.FAILED, 1);
        failedLogins.failed(path, why);
        return Optional.empty();
    }

    /**
     * The repaired record without the paths of sessions that are gone: a session logged in again is a new SCSI host,
     * so its path is at a new address, and the old one (whose host no longer exists) would be reported lost for ever.
     */
    private Map<String, String> withoutGoneSessions(Map<String, String> details, Attachment attachment,
                                                    IscsiVolumeSpec spec) {
        try {
            Set<Integer> hosts = new HashSet<>();
            for (IscsiSessions.Session session : sessions.all()) {
                hosts.add(session.host());
            }
            AttachedLun lun = AttachedLun.fromDetails(details, attachment.device(), attachment.number());
            List<AttachedLun.LunPath> kept = lun.paths().stream().filter(p -> hosts.contains(p.address().host()))
                    .toList();
            Map<String, String> pruned = new LinkedHashMap<>(details);
            pruned.putAll(new AttachedLun(lun.wwid(), kept, lun.mapName(), lun.device(), lun.number(), lun.missing())
                    .details());
            return pruned;
        } catch (IOException | IllegalArgumentException e) {
            LOG.warning(() -> "cannot tell which recorded paths of " + spec.iqn() + " lost their session; the record"
                    + " keeps them: " + e.getMessage());
            return details;
        }
    }
}
