package dev.blocknode.scsi.reservation;

import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * PERSISTENT RESERVE IN / READ RESERVATION's answer: the PRgeneration (bytes 0-3), and, when the ADDITIONAL
 * LENGTH (bytes 4-7) is 10h, the holder's RESERVATION KEY (8-15) and its SCOPE and TYPE (byte 21). An
 * all-registrants reservation reports key 0 (every registrant holds it).
 */
public record Reservation(long generation, Optional<Held> held) {

    /** A reservation in force: the holder's key and the type. */
    public record Held(long key, PrType type) {
    }

    public static final int ALLOCATION = 24;

    public static Reservation parse(byte[] data) {
        PrInHeader header = PrInHeader.parse(data, "READ RESERVATION");
        long additional = header.additionalLength();
        if (additional == 0) {
            return new Reservation(header.generation(), Optional.empty());
        }
        if (additional < 0x10 || data.length < 22) {
            throw new IllegalArgumentException("READ RESERVATION returned a descriptor of " + additional + " bytes in "
                    + data.length + " (16 expected)");
        }
        return new Reservation(header.generation(), Optional.of(new Held(ByteBuffer.wrap(data).getLong(8),
                PrType.ofCode(data[21] & 0x0f))));
    }
}
