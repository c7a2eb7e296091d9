package dev.blocknode.doctor;

import java.util.ArrayList;
import java.util.List;

/**
 * Whether dm-multipath is there to join the paths of a SCSI transport's LUNs (iSCSI, Fibre Channel): without it a
 * LUN seen through one path runs on that path alone, and one seen through several gets a map that no multipathd
 * checks. The finding goes into the transport's own section, since that is where an operator of an iSCSI or FC
 * node looks; multipath's section says the same from its side.
 */
final class SanMultipath {

    private SanMultipath() {
    }

    /**
     * {@code san}'s findings and one more, {@code multipath}, saying whether dm-multipath is set up; {@code alone}
     * says what a volume of this transport is left with when it is not. Nothing is added when the transport is
     * not set up, or when either section could not be checked (that section says why).
     */
    static TransportReadiness alongside(TransportReadiness san, TransportReadiness multipath, String name,
            String alone) {
        if (san.notSetUp().isPresent() || unreadable(san) || unreadable(multipath)) {
            return san;
        }
        List<Finding> findings = new ArrayList<>(san.findings());
        findings.add(multipath.notSetUp().map(why -> Finding.warning("multipath", name + " is set up but"
                + " dm-multipath is not (" + why + "): " + alone, "on the host: install multipath-tools (RHEL:"
                + " device-mapper-multipath) and systemctl enable --now multipathd"
                + " (docs/install.md#host-prerequisites)"))
                .orElseGet(() -> Finding.ok("multipath", "dm-multipath is set up: a volume's paths become one"
                        + " map (checked under multipath)")));
        return TransportReadiness.of(san.transport(), findings);
    }

    private static boolean unreadable(TransportReadiness transport) {
        return transport.findings().stream().anyMatch(f -> f.check().equals(Doctor.UNREADABLE));
    }
}
