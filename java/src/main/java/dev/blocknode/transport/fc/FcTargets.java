package dev.blocknode.transport.fc;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.transport.san.ScanJournal;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The remote ports of a volume's targets as a stage and a path repair use them: the LUN's address behind each one
 * that is usable now, and the scan journal's entry written before anything is scanned behind it.
 */
final class FcTargets {

    private final FcPorts ports;
    private final ScanJournal scans;

    FcTargets(FcPorts ports, ScanJournal scans) {
        this.ports = ports;
        this.scans = scans;
    }

    /**
     * The addresses a stage scans and a repair looks at, each with the WWPN of its target port, saying in
     * {@code skipped} why each other port of the targets is not used (see {@link FcTransport} for which are usable).
     */
    Map<ScsiAddress, String> usableAddresses(FcVolumeSpec spec, List<String> skipped) throws IOException {
        Map<ScsiAddress, String> addresses = new LinkedHashMap<>();
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
            addresses.putIfAbsent(port.lunAddress(spec.lun().orElseThrow()), port.portName());
        }
        return addresses;
    }

    /** Writes the scan journal's entry of the LUN behind the target port, durably; no scan without it. */
    void journal(String volumeId, String wwpn, long lun) throws VolumeException {
        try {
            scans.record(FcLeftoverLuns.entry(wwpn, lun));
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot journal the scan of LUN " + lun
                    + " behind 0x" + wwpn + " in the state directory; nothing is scanned without it", e);
        }
    }
}
