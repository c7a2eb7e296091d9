package dev.blocknode.scsi.reservation;

import java.nio.ByteBuffer;

/**
 * The bytes of PERSISTENT RESERVE IN (5Eh) and PERSISTENT RESERVE OUT (5Fh), as SPC-4 lays them out: both
 * 10-byte CDBs with the service action in byte 1 (bits 4-0); IN with its ALLOCATION LENGTH in bytes 7-8, OUT
 * with SCOPE (bits 7-4, always 0: LU_SCOPE) and TYPE (bits 3-0) in byte 2 and PARAMETER LIST LENGTH in bytes
 * 5-8; OUT's basic parameter list is 24 bytes: RESERVATION KEY (0-7), SERVICE ACTION RESERVATION KEY (8-15),
 * and the SPEC_I_PT, ALL_TG_PT and APTPL bits in byte 20, all left 0 here (every path registers for itself;
 * nothing is to survive the target's power loss that the node would not set up again).
 */
public final class PrCommands {

    public static final int PERSISTENT_RESERVE_IN = 0x5e;
    public static final int PERSISTENT_RESERVE_OUT = 0x5f;

    /** PERSISTENT RESERVE IN service actions. */
    public enum In {
        READ_KEYS(0x00), READ_RESERVATION(0x01), REPORT_CAPABILITIES(0x02);

        final int code;

        In(int code) {
            this.code = code;
        }
    }

    /** PERSISTENT RESERVE OUT service actions (those blocknode sends). */
    public enum Out {
        REGISTER(0x00), RESERVE(0x01), RELEASE(0x02), PREEMPT(0x04), PREEMPT_AND_ABORT(0x05),
        REGISTER_AND_IGNORE_EXISTING_KEY(0x06);

        final int code;

        Out(int code) {
            this.code = code;
        }
    }

    /** The length of OUT's basic parameter list. */
    public static final int PARAMETER_LIST_LENGTH = 24;

    private PrCommands() {
    }

    public static byte[] in(In action, int allocationLength) {
        if (allocationLength < 8 || allocationLength > 0xffff) {
            throw new IllegalArgumentException("allocation length " + allocationLength + " is not within 8..65535");
        }
        byte[] cdb = new byte[10];
        cdb[0] = (byte) PERSISTENT_RESERVE_IN;
        cdb[1] = (byte) action.code;
        cdb[7] = (byte) (allocationLength >>> 8);
        cdb[8] = (byte) allocationLength;
        return cdb;
    }

    /** @param type the TYPE field; null for service actions that ignore it (REGISTER ...) */
    public static byte[] out(Out action, PrType type) {
        byte[] cdb = new byte[10];
        cdb[0] = (byte) PERSISTENT_RESERVE_OUT;
        cdb[1] = (byte) action.code;
        cdb[2] = (byte) (type == null ? 0 : type.code()); // SCOPE 0h: LU_SCOPE
        cdb[8] = (byte) PARAMETER_LIST_LENGTH;
        return cdb;
    }

    public static byte[] parameters(long reservationKey, long serviceActionKey) {
        return ByteBuffer.allocate(PARAMETER_LIST_LENGTH).putLong(reservationKey).putLong(serviceActionKey).array();
    }
}
