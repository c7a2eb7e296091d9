package dev.blocknode.transport.san;

import dev.blocknode.scsi.reservation.TargetProduct;

import java.util.Optional;

/**
 * Targets known to keep persistent reservations in a way that makes fencing harmful, by the vendor and product
 * their INQUIRY data names. SPC-4 binds a registration to its I_T nexus, which outlives a session: an iSCSI
 * initiator that logs in again after a path loss (same initiator port, same ISID) is the same nexus and keeps it.
 * Linux's tgt (scsi-target-utils, INQUIRY "IET VIRTUAL-DISK" unless reconfigured) ties a registration to the
 * session instead: the path that logs back in comes back unregistered, and under a type 5 reservation its
 * writes then fail with RESERVATION CONFLICT, which dm-multipath does not retry on another path, so the
 * filesystem sees an I/O error (measured in the VM tier: ext4 aborted its journal) until the next renewal
 * registers the path again. A path flap must not break a volume, so such a LUN is not fenced.
 */
final class ReservationQuirks {

    private ReservationQuirks() {
    }

    /** Why a LUN of this target must not be fenced; empty for a target with no known quirk. */
    static Optional<String> whyNotFenced(TargetProduct target) {
        if (target.vendor().equals("IET") && target.product().equals("VIRTUAL-DISK")) {
            return Optional.of("its target (INQUIRY " + target + ", Linux tgt) drops a path's reservation"
                    + " registration when the path's session logs in again, so a path flap would fail the volume's"
                    + " writes");
        }
        return Optional.empty();
    }
}
