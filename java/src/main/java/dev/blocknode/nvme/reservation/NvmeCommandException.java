package dev.blocknode.nvme.reservation;

import java.io.IOException;

/**
 * An NVMe command that did not succeed: it could not be issued (no path, the namespace gone), or the controller
 * answered with a status blocknode has no better class for. The subclasses are the answers the fencing protocol
 * acts on, as for SCSI.
 */
public class NvmeCommandException extends IOException {

    private static final long serialVersionUID = 1L;

    public NvmeCommandException(String message) {
        super(message);
    }

    public NvmeCommandException(String message, Throwable cause) {
        super(message, cause);
    }

    /** Reservation Conflict (status 83h): this host may not do this under the registrations and reservation. */
    public static final class ReservationConflict extends NvmeCommandException {

        private static final long serialVersionUID = 1L;

        public ReservationConflict(String message) {
            super(message);
        }
    }

    /** Invalid Command Opcode or Invalid Field: the namespace does not support this command, action or type. */
    public static final class NotSupported extends NvmeCommandException {

        private static final long serialVersionUID = 1L;

        public NotSupported(String message) {
            super(message);
        }
    }
}
