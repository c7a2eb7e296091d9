package dev.blocknode.scsi.reservation;

import java.util.Optional;

/**
 * The sense key, ASC and ASCQ of sense data in either of SPC-4's formats: fixed (response codes 70h, 71h: key
 * in byte 2 bits 3-0, ASC byte 12, ASCQ byte 13) or descriptor (72h, 73h: key in byte 1, ASC byte 2, ASCQ
 * byte 3).
 */
public record Sense(int key, int asc, int ascq) {

    public static final int NOT_READY = 0x2;
    public static final int ILLEGAL_REQUEST = 0x5;
    public static final int UNIT_ATTENTION = 0x6;

    /** Empty when the bytes are too short or of no known format. */
    public static Optional<Sense> parse(byte[] bytes) {
        if (bytes.length < 2) {
            return Optional.empty();
        }
        int responseCode = bytes[0] & 0x7f;
        if ((responseCode == 0x70 || responseCode == 0x71) && bytes.length >= 14) {
            return Optional.of(new Sense(bytes[2] & 0x0f, bytes[12] & 0xff, bytes[13] & 0xff));
        }
        if ((responseCode == 0x72 || responseCode == 0x73) && bytes.length >= 4) {
            return Optional.of(new Sense(bytes[1] & 0x0f, bytes[2] & 0xff, bytes[3] & 0xff));
        }
        return Optional.empty();
    }

    @Override
    public String toString() {
        return String.format("sense key %Xh, ASC/ASCQ %02Xh/%02Xh", key, asc, ascq);
    }
}
