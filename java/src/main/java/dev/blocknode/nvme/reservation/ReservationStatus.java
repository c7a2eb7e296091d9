package dev.blocknode.nvme.reservation;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * Reservation Report's answer (the Reservation Status data structure): the generation (bytes 0-3, raised by
 * every registration change and preemption), the reservation type (byte 4, 0 for none), the number of
 * registrants (5-6), then one descriptor per registrant host. In the extended structure (64-byte header and
 * descriptors, 128-bit host identifiers, which NVMe over Fabrics uses) a descriptor holds the controller ID
 * (0-1), the status (2, bit 0: holds the reservation), the key (8-15) and the host identifier (16-31); in the
 * plain one (24 bytes each) the host identifier is at 8-15 and the key at 16-23. A list longer than the buffer is
 * cut: only whole descriptors that arrived are read, and {@link #complete()} says so.
 */
public record ReservationStatus(long generation, Optional<ReservationType> type, int registrantCount,
                                List<Registrant> registrants) {

    /** One registrant host: the key it registered, whether it holds the reservation, its host identifier (hex). */
    public record Registrant(int controllerId, boolean holdsReservation, long key, String hostId) {
    }

    static final int EXTENDED_SIZE = 64;
    static final int PLAIN_SIZE = 24;

    public ReservationStatus {
        registrants = List.copyOf(registrants);
    }

    /** Whether every registrant the header counts is in {@link #registrants()}. */
    public boolean complete() {
        return registrants.size() >= registrantCount;
    }

    /** The registrant that holds the reservation (for an all-registrants type, the first of them). */
    public Optional<Registrant> holder() {
        return registrants.stream().filter(Registrant::holdsReservation).findFirst();
    }

    public List<Long> keys() {
        return registrants.stream().map(Registrant::key).toList();
    }

    /** The bytes a report needs to carry {@code registrants} descriptors. */
    static int length(int registrants, boolean extended) {
        int size = extended ? EXTENDED_SIZE : PLAIN_SIZE;
        return size + size * registrants;
    }

    static ReservationStatus parse(byte[] data, boolean extended) {
        int size = extended ? EXTENDED_SIZE : PLAIN_SIZE;
        if (data.length < size) {
            throw new IllegalArgumentException("Reservation Report returned " + data.length + " bytes, less than its "
                    + size + "-byte header");
        }
        ByteBuffer bytes = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        long generation = Integer.toUnsignedLong(bytes.getInt(0));
        int typeCode = data[4] & 0xff;
        int count = Short.toUnsignedInt(bytes.getShort(5));
        List<Registrant> registrants = new ArrayList<>();
        for (int i = 0, at = size; i < count && at + size <= data.length; i++, at += size) {
            registrants.add(registrant(bytes, data, at, extended));
        }
        return new ReservationStatus(generation,
                typeCode == 0 ? Optional.empty() : Optional.of(ReservationType.ofCode(typeCode)), count, registrants);
    }

    private static Registrant registrant(ByteBuffer bytes, byte[] data, int at, boolean extended) {
        int controllerId = Short.toUnsignedInt(bytes.getShort(at));
        boolean holds = (data[at + 2] & 0x1) != 0;
        long key = bytes.getLong(at + (extended ? 8 : 16));
        int hostAt = at + (extended ? 16 : 8);
        String hostId = HexFormat.of().formatHex(data, hostAt, hostAt + (extended ? 16 : 8));
        return new Registrant(controllerId, holds, key, hostId);
    }
}
