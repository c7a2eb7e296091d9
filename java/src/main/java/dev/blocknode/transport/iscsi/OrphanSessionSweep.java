package dev.blocknode.transport.iscsi;

import dev.blocknode.metrics.PathSweeps;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.RetryBackoff;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * Logs out of the iSCSI sessions, and deletes the node records, that blocknode made and nothing needs any more: an
 * undo of an interrupted or refused attach, or a detach, whose logout failed after the record that named the target
 * was gone (the undo is best effort: the call reports its own outcome and deletes its record all the same).
 *
 * <p>What "blocknode made it" means: its {@link LoginJournal} has an entry for the target, portal and iface, written
 * and fsynced before the record was made and the login run. Never a name pattern: a session without an entry (an
 * administrator's, a blocknode older than the journal) is never touched. What "nothing needs it" means, all of:
 * <ul>
 *   <li>no staging record of any phase names the path (an ATTACHING or UNSTAGING record still does: its own undo or
 *       teardown, at start or on kubelet's retry, owns it). Records are read once, and again after the path's session
 *       lock is taken: every stage records its intent (ATTACHING) before it takes that lock to log in, so a stage that
 *       logged in before the sweep took the lock is seen by the second read, and one that comes after waits for the
 *       lock and logs in anew. An unstage or undo holds the same lock for its own logout;</li>
 *   <li>the session carries no SCSI device at all ({@link IscsiSessions#devices}), whoever's: a session with a disk
 *       is reported ({@link OrphanSweep#kept}), never logged out, since the disk may carry a map or a mount no record
 *       knows of.</li>
 * </ul>
 * Any record that cannot be read stops the whole sweep: it may name any target.
 *
 * <p>A logout or node record deletion that failed is not tried again for that target and portal for a growing while
 * ({@link RetryBackoff}: one repair interval at first, doubling up to {@link #RETRY_MAX}); meanwhile the leftover is
 * still reported as kept, with the failure and the wait.
 */
final class OrphanSessionSweep {

    private static final Logger LOG = Logger.getLogger(OrphanSessionSweep.class.getName());
    /** The default repair interval: a sweep's failure is tried again on the next pass at first. */
    static final Duration RETRY_FIRST = Duration.ofSeconds(30);
    static final Duration RETRY_MAX = Duration.ofMinutes(16);

    private final IscsiSessions sessions;
    private final IscsiAdm iscsiadm;
    private final NodeRecordFiles records;
    private final KeyedLocks<IscsiPath> sessionLocks;
    private final LoginJournal journal;
    private final RetryBackoff<IscsiPath> failed;

    OrphanSessionSweep(IscsiSessions sessions, IscsiAdm iscsiadm, NodeRecordFiles records,
                       KeyedLocks<IscsiPath> sessionLocks, LoginJournal journal, Duration repairInterval,
                       LongSupplier nanoTime) {
        // A failed logout or deletion is tried again one repair interval later, at the latest.
        this.failed = new RetryBackoff<>(RETRY_FIRST, RETRY_MAX, repairInterval, nanoTime);
        this.sessions = sessions;
        this.iscsiadm = iscsiadm;
        this.records = records;
        this.sessionLocks = sessionLocks;
        this.journal = journal;
        PathSweeps.register(IscsiTransport.NAME, PathSweeps.SESSION);
        PathSweeps.register(IscsiTransport.NAME, PathSweeps.NODE_RECORD);
    }

    OrphanSweep sweep(OrphanSweep.Recorded recorded) throws VolumeException {
        List<IscsiPath> proven;
        try {
            proven = journal.all();
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the iSCSI login journal; nothing is swept", e);
        }
        if (proven.isEmpty()) {
            return OrphanSweep.NONE;
        }
        Set<IscsiPath> named = named(recorded);
        List<String> removed = new ArrayList<>();
        List<String> kept = new ArrayList<>();
        for (IscsiPath path : proven) {
            if (named.contains(path)) {
                continue;
            }
            try (KeyedLocks.Held ignored = sessionLocks.lock(path)) {
                if (named(recorded).contains(path)) {
                    continue; // a stage recorded its intent meanwhile: the target is its own again
                }
                sweep(path, removed, kept);
            }
        }
        return new OrphanSweep(removed, kept);
    }

    /** Called with the path's lock held and no record naming it. */
    private void sweep(IscsiPath path, List<String> removed, List<String> kept) {
        Optional<String> waiting = failed.pending(path);
        if (waiting.isPresent()) {
            kept.add("iSCSI session or node record of " + path + ": no staging record names it; " + waiting.get());
            return;
        }
        try {
            Optional<IscsiSessions.Session> session = sessions.find(path);
            if (session.isPresent()) {
                List<String> devices = sessions.devices(session.get());
                if (!devices.isEmpty()) {
                    kept.add("iSCSI session" + session.get().number() + " of " + path + ": no staging record names it,"
                            + " but it carries SCSI device(s) " + devices + "; left logged in");
                    return;
                }
                iscsiadm.logout(path);
                if (sessions.find(path).filter(s -> s.number() == session.get().number()).isPresent()) {
                    // Measured in the VM tier: with iscsid down, iscsiadm can report a logout that did not happen.
                    throw new IOException("iscsiadm reported the logout, but session" + session.get().number()
                            + " is still there (is iscsid running?)");
                }
                PathSweeps.count(IscsiTransport.NAME, PathSweeps.SESSION, PathSweeps.REMOVED);
                String what = "session" + session.get().number() + " of " + path;
                LOG.info(() -> "orphan sweep: logged out of " + what + ": no staging record names it, it carried no"
                        + " disk, and blocknode's login journal says blocknode made it");
                removed.add(what);
            }
        } catch (IOException e) {
            PathSweeps.count(IscsiTransport.NAME, PathSweeps.SESSION, PathSweeps.FAILED);
            String why = failed.failed(path, "its logout failed: " + e.getMessage());
            LOG.warning(() -> "orphan sweep: cannot log out of " + path + ": " + why);
            kept.add("iSCSI session of " + path + ": no staging record names it; " + why);
            return;
        }
        try {
            if (records.find(path).isPresent()) {
                iscsiadm.deleteNodeRecord(path);
                PathSweeps.count(IscsiTransport.NAME, PathSweeps.NODE_RECORD, PathSweeps.REMOVED);
                LOG.info(() -> "orphan sweep: deleted the node record of " + path + ": no staging record names it and"
                        + " no session uses it");
                removed.add("node record of " + path);
            }
            journal.forget(path);
            failed.succeeded(path);
        } catch (CommandException e) {
            PathSweeps.count(IscsiTransport.NAME, PathSweeps.NODE_RECORD, PathSweeps.FAILED);
            String why = failed.failed(path, "deleting it failed: " + e.getMessage());
            LOG.warning(() -> "orphan sweep: cannot delete the node record of " + path + ": " + why);
            kept.add("iSCSI node record of " + path + ": no staging record names it; " + why);
        } catch (IOException e) {
            String why = failed.failed(path, e.getMessage());
            LOG.warning(() -> "orphan sweep: cannot look at or forget the node record of " + path + ": " + why);
            kept.add("iSCSI node record of " + path + ": " + why);
        }
    }

    /** Every path any staging record names; a record whose iSCSI contexts do not parse stops the sweep. */
    private static Set<IscsiPath> named(OrphanSweep.Recorded recorded) throws VolumeException {
        Set<IscsiPath> named = new HashSet<>();
        for (AttachRequest request : recorded.read()) {
            named.addAll(IscsiVolumeSpec.from(request).paths());
        }
        return named;
    }
}
