package dev.blocknode.nvme.reservation;

/**
 * The NVMe reservation types (NVMe Base Specification, "Reservation Type Encoding"), by their code. SCSI's
 * type 5, which blocknode's SCSI fencing uses, is NVMe's {@link #WRITE_EXCLUSIVE_REGISTRANTS_ONLY}: registrants
 * write, every host reads, and the holder is the one host that acquired it.
 */
public enum ReservationType {
    WRITE_EXCLUSIVE(1),
    EXCLUSIVE_ACCESS(2),
    WRITE_EXCLUSIVE_REGISTRANTS_ONLY(3),
    EXCLUSIVE_ACCESS_REGISTRANTS_ONLY(4),
    WRITE_EXCLUSIVE_ALL_REGISTRANTS(5),
    EXCLUSIVE_ACCESS_ALL_REGISTRANTS(6);

    private final int code;

    ReservationType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** The type of an RTYPE field; 0 (no reservation) and reserved codes are refused. */
    public static ReservationType ofCode(int code) {
        for (ReservationType type : values()) {
            if (type.code == code) {
                return type;
            }
        }
        throw new IllegalArgumentException("reserved NVMe reservation type code " + code);
    }
}
