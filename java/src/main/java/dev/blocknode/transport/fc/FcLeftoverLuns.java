package dev.blocknode.transport.fc;

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
import java.util.Set;

/**
 * What the sweep of leftover LUNs ({@link LeftoverLunSweep}) needs to know of Fibre Channel: a scan journal entry's
 * target is the WWPN of the array's port, one line of 16 lower-case hex digits. Not the rport (rport-H:C-N): its
 * number and host change when the port returns after a loss or the HBA port is made again (FCoE), while the WWPN
 * stays. Nor the HBA port: a stage and a repair scan the LUN behind the target port through every HBA port that sees
 * it, so the entry stands for the LUN's address behind every remote port of that WWPN that is a SCSI target. The
 * target port's lock is what a stage takes before it journals and scans there.
 */
final class FcLeftoverLuns implements LeftoverLunSweep.Targets {

    private final OrphanSweep.Recorded recorded;
    private final FcPorts ports;
    private final KeyedLocks<String> targetLocks;

    FcLeftoverLuns(OrphanSweep.Recorded recorded, FcPorts ports, KeyedLocks<String> targetLocks) {
        this.recorded = recorded;
        this.ports = ports;
        this.targetLocks = targetLocks;
    }

    /** The scan journal's entry of {@code lun} behind the target port {@code wwpn} (as {@link Wwpn} spells it). */
    static ScanJournal.Entry entry(String wwpn, long lun) {
        return new ScanJournal.Entry(FcTransport.NAME, List.of(wwpn), lun);
    }

    /** One WWPN, spelled as {@link Wwpn} spells it, and a LUN the kernel's scan attribute takes. */
    @Override
    public void check(ScanJournal.Entry entry) {
        try {
            wwpnOf(entry);
        } catch (IOException notAWwpn) {
            throw new IllegalArgumentException("its target is not one FC target port's WWPN", notAWwpn);
        }
        if (!FcVolumeSpec.isLun(entry.lun())) {
            throw new IllegalArgumentException("LUN " + entry.lun() + " is out of an FC volume's range");
        }
    }

    @Override
    public Set<ScanJournal.Entry> named() throws VolumeException {
        Set<ScanJournal.Entry> named = new HashSet<>();
        for (AttachRequest request : recorded.read()) {
            FcVolumeSpec spec = FcVolumeSpec.parse(request);
            if (spec.scansTargets()) {
                spec.targetWwpns().forEach(wwpn -> named.add(entry(wwpn, spec.lun().orElseThrow())));
            }
        }
        return named;
    }

    @Override
    public List<ScsiAddress> addresses(ScanJournal.Entry entry) throws IOException {
        return ports.lunAddresses(wwpnOf(entry), entry.lun());
    }

    @Override
    public KeyedLocks.Held lock(ScanJournal.Entry entry) {
        try {
            return targetLocks.lock(wwpnOf(entry));
        } catch (IOException notATarget) {
            return () -> { }; // nothing to keep away: its addresses() refuses it, so nothing of it is touched
        }
    }

    private static String wwpnOf(ScanJournal.Entry entry) throws IOException {
        List<String> target = entry.target();
        try {
            if (target.size() == 1 && Wwpn.normalize(target.get(0)).equals(target.get(0))) {
                return target.get(0);
            }
        } catch (IllegalArgumentException notAWwpn) {
            // reported below
        }
        throw new IOException("the scan journal's entry " + entry + " does not name an FC target port's WWPN");
    }
}
