package dev.blocknode.scsi.reservation;

import java.io.IOException;

/**
 * A SCSI command that did not complete with GOOD: the path failed on the way (transport or timeout), or the
 * device answered with a status or sense blocknode has no better class for. The subclasses are the answers
 * the fencing protocol acts on.
 */
public class ScsiCommandException extends IOException {

    private static final long serialVersionUID = 1L;

    public ScsiCommandException(String message) {
        super(message);
    }

    public ScsiCommandException(String message, Throwable cause) {
        super(message, cause);
    }

    /** RESERVATION CONFLICT (status 18h): the I_T nexus may not do this under the registrations and reservation. */
    public static final class ReservationConflict extends ScsiCommandException {

        private static final long serialVersionUID = 1L;

        public ReservationConflict(String message) {
            super(message);
        }
    }

    /** CHECK CONDITION, ILLEGAL REQUEST: the device does not support this command, service action or type. */
    public static final class NotSupported extends ScsiCommandException {

        private static final long serialVersionUID = 1L;

        public NotSupported(String message) {
            super(message);
        }
    }
}
