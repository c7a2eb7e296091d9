package dev.blocknode.scsi.reservation;

/** The persistent reservation types of SPC-4 (table "Persistent reservation type codes"), by their code. */
public enum PrType {
    WRITE_EXCLUSIVE(0x1),
    EXCLUSIVE_ACCESS(0x3),
    /** Type 5: only registered I_T nexuses may write; the holder is the nexus that reserved. */
    WRITE_EXCLUSIVE_REGISTRANTS_ONLY(0x5),
    EXCLUSIVE_ACCESS_REGISTRANTS_ONLY(0x6),
    WRITE_EXCLUSIVE_ALL_REGISTRANTS(0x7),
    EXCLUSIVE_ACCESS_ALL_REGISTRANTS(0x8);

    private final int code;

    PrType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** The type of a TYPE field; unknown codes (reserved ones) are refused. */
    public static PrType ofCode(int code) {
        for (PrType type : values()) {
            if (type.code == code) {
                return type;
            }
        }
        throw new IllegalArgumentException("reserved persistent reservation type code " + code);
    }
}
