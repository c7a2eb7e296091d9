package dev.blocknode.transport.san;

import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.reservation.Capabilities;
import dev.blocknode.scsi.reservation.PersistentReservations;

import java.io.IOException;
import java.util.Optional;

/** Whether a LUN can be fenced at all, asked through one of its paths before a stage registers anything. */
final class FenceCapability {

    private final PersistentReservations pr;

    FenceCapability(PersistentReservations pr) {
        this.pr = pr;
    }

    /** Why the LUN behind {@code path} cannot be fenced: a known quirk of its target, or no type 5. */
    Optional<String> whyNot(LunPath path) {
        return knownQuirk(path).or(() -> lacksType5(path));
    }

    /** A target whose way of keeping reservations makes fencing harmful (see {@link ReservationQuirks}). */
    private Optional<String> knownQuirk(LunPath path) {
        try {
            return ReservationQuirks.whyNotFenced(pr.inquiry(path));
        } catch (IOException | IllegalArgumentException unknown) {
            return Optional.empty(); // every target answers INQUIRY; one that does not is no known quirk
        }
    }

    /** REPORT CAPABILITIES' word on type 5; a target that does not implement the command is taken at RESERVE. */
    private Optional<String> lacksType5(LunPath path) {
        try {
            Capabilities capabilities = pr.reportCapabilities(path);
            return capabilities.supports(LunFencing.TYPE) ? Optional.empty()
                    : Optional.of("its LUN does not support reservation type 5 (Write Exclusive - Registrants Only);"
                    + " it lists " + capabilities.types());
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}
