package dev.blocknode.transport.iscsi;

import dev.blocknode.metrics.Phases;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.san.SanStack;
import dev.blocknode.transport.san.ScanJournal;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.logging.Logger;

/**
 * The logins and logouts of the iSCSI transport, per target and portal under its lock: a stage's login to each
 * portal of its volume (one session shared by every volume of the target) with the LUN scanned in on it, and the
 * logout of a session that carries no LUN any more, with the node record and the journal entries that went with
 * it. What a login leaves is journaled first, so that the sweeps can prove it is blocknode's.
 */
final class IscsiLogins {

    /** Its lines are the transport's, as before it was split out. */
    private static final Logger LOG = Logger.getLogger(IscsiTransport.class.getName());

    private static final Duration SESSION_APPEARS = Duration.ofSeconds(10);
    private static final Duration SESSION_GOES = Duration.ofSeconds(10);

    /**
     * What a stage's logins came to: the LUN's address on each portal logged in to (and those of them this call
     * scanned in), and, for the others, why, which portals failed and which of them refused the credentials.
     */
    record Round(List<ScsiAddress> addresses, List<ScsiAddress> scanned, List<String> failures,
                 List<IscsiPath> failedPaths, List<IscsiPath> refusedCredentials) {

        boolean authenticationFailed() {
            return !refusedCredentials.isEmpty();
        }
    }

    private final IscsiSessions sessions;
    private final IscsiAdm iscsiadm;
    private final NodeRecordFiles records;
    private final KeyedLocks<IscsiPath> sessionLocks;
    private final LoginJournal journal;
    private final ScanJournal scans;
    private final DeviceWaiter waiter;
    private final SanStack san;

    IscsiLogins(IscsiInitiator initiator, LoginJournal journal, ScanJournal scans, DeviceWaiter waiter, SanStack san) {
        this.sessions = initiator.sessions();
        this.iscsiadm = initiator.iscsiadm();
        this.records = initiator.records();
        this.sessionLocks = initiator.sessionLocks();
        this.journal = journal;
        this.scans = scans;
        this.waiter = waiter;
        this.san = san;
    }

    /**
     * A stage's login to every portal of the volume, each under its path's lock: the live session or a new one, the
     * LUN's scan journal entry, then the targeted scan of the LUN on it.
     */
    Round logInAll(String volumeId, IscsiVolumeSpec spec, Optional<ChapCredentials> chap,
                   OptionalInt replacementTimeout) {
        Round round = new Round(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
                new ArrayList<>());
        for (IscsiPath path : spec.paths()) {
            round.failedPaths().add(path);
            try (KeyedLocks.Held ignored = sessionLocks.lock(path)) {
                IscsiSessions.Session session = ensureSession(path, chap, replacementTimeout);
                ScsiAddress address = session.addressOf(spec.lun());
                // The proof the leftover sweep needs that a disk at this address is blocknode's, durably first.
                scans.record(IscsiLeftoverLuns.entry(path, spec.lun()));
                if (san.targetedScan().bringIn(volumeId, address)) {
                    round.scanned().add(address);
                    LOG.info(() -> "volume " + volumeId + ": scanned " + address + " on " + path);
                }
                round.addresses().add(address);
                round.failedPaths().remove(path);
            } catch (CommandException e) {
                if (IscsiAdm.isAuthenticationFailure(e)) {
                    round.refusedCredentials().add(path);
                }
                round.failures().add(path + ": " + e.getMessage());
            } catch (IOException e) {
                round.failures().add(path + ": " + e.getMessage());
            }
        }
        return round;
    }

    /**
     * A portal whose login failed keeps nothing: no session was made, and its record (which may hold a
     * wrong CHAP password) is deleted. Best effort: the login failure is what the caller reports.
     */
    void forgetFailedPaths(List<IscsiPath> failed) {
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
    void forgetScan(IscsiPath path, String lun) {
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
    void forgetScanIfGone(IscsiPath path, long lun) throws IOException {
        Optional<IscsiSessions.Session> session = sessions.find(path);
        if (session.isPresent()) {
            if (san.devices().diskAt(session.get().addressOf(lun)).isPresent()) {
                return;
            }
        }
        scans.forget(IscsiLeftoverLuns.entry(path, lun));
    }

    /** Logs out only when the session carries no LUN device any more; another volume may still use it. */
    void logOutIfUnused(IscsiPath path) throws IOException {
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
            waiter.within(SESSION_GOES, "session" + number + " of " + path
                    + " to end after iscsiadm's logout (is iscsid"
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
