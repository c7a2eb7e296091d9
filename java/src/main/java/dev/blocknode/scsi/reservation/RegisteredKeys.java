package dev.blocknode.scsi.reservation;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * PERSISTENT RESERVE IN / READ KEYS's answer: the PRgeneration (bytes 0-3), the ADDITIONAL LENGTH (4-7), then
 * one 8-byte RESERVATION KEY per registered I_T nexus (a key registered through several nexuses appears once
 * for each). A list longer than the buffer is cut: only whole keys that arrived are read.
 */
public record RegisteredKeys(long generation, List<Long> keys) {

    public static final int ALLOCATION = 8 + 8 * 256;

    public RegisteredKeys {
        keys = List.copyOf(keys);
    }

    public static RegisteredKeys parse(byte[] data) {
        PrInHeader header = PrInHeader.parse(data, "READ KEYS");
        ByteBuffer bytes = ByteBuffer.wrap(data);
        long available = Math.min(header.additionalLength(), data.length - 8L) / 8;
        List<Long> keys = new ArrayList<>();
        for (int i = 0; i < available; i++) {
            keys.add(bytes.getLong(8 + 8 * i));
        }
        return new RegisteredKeys(header.generation(), keys);
    }
}
