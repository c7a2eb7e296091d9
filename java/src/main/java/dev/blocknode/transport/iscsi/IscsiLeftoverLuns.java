package dev.blocknode.transport.iscsi;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.san.LeftoverLunSweep;
import dev.blocknode.transport.san.ScanJournal;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What the sweep of leftover LUNs ({@link LeftoverLunSweep}) needs to know of iSCSI: a scan journal entry's target is
 * a session's IQN, portal and iface (the login journal's three lines), its LUN is at the session's H:C:T:LUN while the
 * session exists and nowhere once it is gone (its disks go with it), and the session's lock is what every stage takes
 * before it scans there and every unstage before it logs out.
 */
final class IscsiLeftoverLuns implements LeftoverLunSweep.Targets {

    private final OrphanSweep.Recorded recorded;
    private final IscsiSessions sessions;
    private final KeyedLocks<IscsiPath> sessionLocks;

    IscsiLeftoverLuns(OrphanSweep.Recorded recorded, IscsiSessions sessions, KeyedLocks<IscsiPath> sessionLocks) {
        this.recorded = recorded;
        this.sessions = sessions;
        this.sessionLocks = sessionLocks;
    }

    /** The scan journal's entry of {@code lun} through {@code path}. */
    static ScanJournal.Entry entry(IscsiPath path, long lun) {
        return new ScanJournal.Entry(IscsiTransport.NAME, LoginJournal.linesOf(path), lun);
    }

    /** The login journal's target, portal and iface, each by its format, and a LUN a volume may name. */
    @Override
    public void check(ScanJournal.Entry entry) {
        LoginJournal.pathOf(entry.target());
        if (!IscsiVolumeSpec.isLun(entry.lun())) {
            throw new IllegalArgumentException("LUN " + entry.lun() + " is out of an iSCSI volume's range");
        }
    }

    @Override
    public Set<ScanJournal.Entry> named() throws VolumeException {
        Set<ScanJournal.Entry> named = new HashSet<>();
        for (AttachRequest request : recorded.read()) {
            IscsiVolumeSpec spec = IscsiVolumeSpec.from(request);
            spec.paths().forEach(path -> named.add(entry(path, spec.lun())));
        }
        return named;
    }

    @Override
    public List<ScsiAddress> addresses(ScanJournal.Entry entry) throws IOException {
        Optional<IscsiSessions.Session> session = sessions.find(pathOf(entry));
        if (session.isEmpty()) {
            return List.of();
        }
        return List.of(session.get().addressOf(entry.lun()));
    }

    @Override
    public KeyedLocks.Held lock(ScanJournal.Entry entry) {
        try {
            return sessionLocks.lock(pathOf(entry));
        } catch (IOException notATarget) {
            return () -> { }; // nothing to keep away: its addresses() refuses it, so nothing of it is touched
        }
    }

    private static IscsiPath pathOf(ScanJournal.Entry entry) throws IOException {
        try {
            return LoginJournal.pathOf(List.copyOf(entry.target()));
        } catch (IllegalArgumentException e) {
            throw new IOException("the scan journal's entry " + entry + " does not name an iSCSI target, portal and"
                    + " iface", e);
        }
    }
}
