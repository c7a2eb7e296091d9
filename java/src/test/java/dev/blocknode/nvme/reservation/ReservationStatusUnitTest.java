package dev.blocknode.nvme.reservation;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Reservation Report's data, built by hand as the NVMe Base Specification lays it out, read back. */
class ReservationStatusUnitTest {

    private static final String HOST_A = "00112233445566778899aabbccddeeff";
    private static final String HOST_B = "ffeeddccbbaa99887766554433221100";

    @Test
    void theExtendedStructureNamesTheHolderItsTypeAndEveryRegistrantsKeyAndHost() {
        ByteBuffer data = ByteBuffer.allocate(64 * 3).order(ByteOrder.LITTLE_ENDIAN);
        data.putInt(0, 7).put(4, (byte) 3).putShort(5, (short) 2).put(9, (byte) 0);
        data.putShort(64, (short) 0xffff).put(66, (byte) 1).putLong(72, 0xaaaa000000000001L)
                .put(80, HexFormat.of().parseHex(HOST_A));
        data.putShort(128, (short) 0x0002).put(130, (byte) 0).putLong(136, 0xbbbb000000000002L)
                .put(144, HexFormat.of().parseHex(HOST_B));

        ReservationStatus status = ReservationStatus.parse(data.array(), true);

        assertEquals(7, status.generation());
        assertEquals(Optional.of(ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY), status.type());
        assertEquals(List.of(new ReservationStatus.Registrant(0xffff, true, 0xaaaa000000000001L, HOST_A),
                new ReservationStatus.Registrant(2, false, 0xbbbb000000000002L, HOST_B)), status.registrants());
        assertEquals(0xaaaa000000000001L, status.holder().orElseThrow().key());
        assertEquals(List.of(0xaaaa000000000001L, 0xbbbb000000000002L), status.keys());
        assertTrue(status.complete());
    }

    @Test
    void thePlainStructureHasTheHostIdentifierBeforeTheKey() {
        ByteBuffer data = ByteBuffer.allocate(24 * 2).order(ByteOrder.LITTLE_ENDIAN);
        data.putInt(0, 0xfffffffe).put(4, (byte) 0).putShort(5, (short) 1);
        data.putShort(24, (short) 1).put(26, (byte) 0).put(32, HexFormat.of().parseHex("0102030405060708"))
                .putLong(40, 0x42L);

        ReservationStatus status = ReservationStatus.parse(data.array(), false);

        assertEquals(0xfffffffeL, status.generation(), "unsigned");
        assertEquals(Optional.empty(), status.type(), "RTYPE 0: no reservation");
        assertEquals(List.of(new ReservationStatus.Registrant(1, false, 0x42L, "0102030405060708")),
                status.registrants());
        assertEquals(Optional.empty(), status.holder());
    }

    @Test
    void aListLongerThanTheBufferIsCutToWholeDescriptorsAndSaysSo() {
        ByteBuffer data = ByteBuffer.allocate(64 * 2 + 10).order(ByteOrder.LITTLE_ENDIAN);
        data.putInt(0, 1).putShort(5, (short) 5).putLong(72, 9L);

        ReservationStatus status = ReservationStatus.parse(data.array(), true);

        assertEquals(5, status.registrantCount());
        assertEquals(List.of(9L), status.keys());
        assertFalse(status.complete());
        assertEquals(64 + 64 * 5, ReservationStatus.length(5, true));
        assertEquals(24 + 24 * 5, ReservationStatus.length(5, false));
    }

    @Test
    void lessThanAHeaderOrAReservedTypeIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> ReservationStatus.parse(new byte[40], true));
        byte[] reserved = new byte[64];
        reserved[4] = 7;
        assertThrows(IllegalArgumentException.class, () -> ReservationStatus.parse(reserved, true));
    }
}
