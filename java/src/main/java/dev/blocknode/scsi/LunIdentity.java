package dev.blocknode.scsi;

import java.util.ArrayList;
import java.util.List;

/**
 * What a SCSI disk says about which logical unit it is: the WWID multipath would use for it, and every
 * LUN designator it reports (the kernel's {@code wwid} and the page 0x83 designators). A requested WWID is
 * verified against all of them: each one names this LUN and no other, whichever a user copied from their
 * storage array's console.
 */
public record LunIdentity(Wwid wwid, List<Wwid> designators) {

    public LunIdentity {
        List<Wwid> all = new ArrayList<>();
        all.add(wwid);
        for (Wwid designator : designators) {
            if (!all.contains(designator)) {
                all.add(designator);
            }
        }
        designators = List.copyOf(all);
    }

    /** True when {@code expected} names this LUN. */
    public boolean matches(Wwid expected) {
        return expected.matchesAny(designators);
    }

    public boolean matchesAny(Iterable<Wwid> expected) {
        for (Wwid wwid : expected) {
            if (matches(wwid)) {
                return true;
            }
        }
        return false;
    }

    /** Two paths reach the same LUN when their WWIDs match. */
    public boolean sameLunAs(LunIdentity other) {
        return wwid.matches(other.wwid);
    }
}
