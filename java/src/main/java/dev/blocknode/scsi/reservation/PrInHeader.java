package dev.blocknode.scsi.reservation;

import java.nio.ByteBuffer;

/**
 * The 8-byte header READ KEYS and READ RESERVATION share: PRgeneration (bytes 0-3), then ADDITIONAL LENGTH (4-7),
 * the bytes that follow it.
 */
record PrInHeader(long generation, long additionalLength) {

    static PrInHeader parse(byte[] data, String command) {
        if (data.length < 8) {
            throw new IllegalArgumentException(command + " returned " + data.length + " bytes, fewer than its 8-byte"
                    + " header");
        }
        ByteBuffer bytes = ByteBuffer.wrap(data);
        return new PrInHeader(Integer.toUnsignedLong(bytes.getInt(0)), Integer.toUnsignedLong(bytes.getInt(4)));
    }
}
