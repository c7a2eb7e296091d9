package dev.blocknode.scsi.reservation;

import java.nio.charset.StandardCharsets;

/**
 * Who made the target, from the standard INQUIRY data (SPC-4 6.6.2): T10 VENDOR IDENTIFICATION (bytes 8-15) and
 * PRODUCT IDENTIFICATION (bytes 16-31), ASCII padded with spaces. Fencing asks it because some targets keep
 * reservations in ways SPC-4 does not allow (see transport/san's ReservationQuirks).
 */
public record TargetProduct(String vendor, String product) {

    /** What INQUIRY is asked for: the 36 bytes every target returns. */
    public static final int ALLOCATION = 36;

    /** INQUIRY (12h), EVPD 0: the standard data. */
    public static byte[] cdb() {
        return new byte[]{0x12, 0, 0, 0, (byte) ALLOCATION, 0};
    }

    public static TargetProduct parse(byte[] data) {
        if (data.length < 32) {
            throw new IllegalArgumentException("INQUIRY returned " + data.length + " bytes, fewer than 32");
        }
        return new TargetProduct(ascii(data, 8, 16), ascii(data, 16, 32));
    }

    private static String ascii(byte[] data, int from, int to) {
        return new String(data, from, to - from, StandardCharsets.US_ASCII).strip();
    }

    @Override
    public String toString() {
        return vendor + " " + product;
    }
}
