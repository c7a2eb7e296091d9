package dev.blocknode.scsi.reservation;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The CDBs, parameter lists and answers of SPC-4's persistent reservation commands, byte for byte. */
class PrBytesUnitTest {

    private static final HexFormat HEX = HexFormat.of();

    @Test
    void persistentReserveInCdbs() {
        assertEquals("5e000000000000001800", HEX.formatHex(PrCommands.in(PrCommands.In.READ_KEYS, 24)));
        assertEquals("5e010000000000001800", HEX.formatHex(PrCommands.in(PrCommands.In.READ_RESERVATION, 24)));
        assertEquals("5e000000000000100800", HEX.formatHex(PrCommands.in(PrCommands.In.READ_KEYS, 0x1008)));
        assertEquals("5e020000000000000800", HEX.formatHex(PrCommands.in(PrCommands.In.REPORT_CAPABILITIES, 8)));
        assertThrows(IllegalArgumentException.class, () -> PrCommands.in(PrCommands.In.READ_KEYS, 0x10000));
    }

    @Test
    void persistentReserveOutCdbsCarryTheServiceActionTypeAndTheParameterListLength() {
        assertEquals("5f000000000000001800", HEX.formatHex(PrCommands.out(PrCommands.Out.REGISTER, null)));
        assertEquals("5f060000000000001800",
                HEX.formatHex(PrCommands.out(PrCommands.Out.REGISTER_AND_IGNORE_EXISTING_KEY, null)));
        assertEquals("5f010500000000001800", HEX.formatHex(PrCommands.out(PrCommands.Out.RESERVE,
                PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY)));
        assertEquals("5f020500000000001800", HEX.formatHex(PrCommands.out(PrCommands.Out.RELEASE,
                PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY)));
        assertEquals("5f040500000000001800", HEX.formatHex(PrCommands.out(PrCommands.Out.PREEMPT,
                PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY)));
        assertEquals("5f050500000000001800", HEX.formatHex(PrCommands.out(PrCommands.Out.PREEMPT_AND_ABORT,
                PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY)));
    }

    @Test
    void theParameterListIsBothKeysBigEndianAndNoFlags() {
        assertEquals("0102030405060708" + "a1a2a3a4a5a60002" + "00000000" + "00000000",
                HEX.formatHex(PrCommands.parameters(0x0102030405060708L, 0xa1a2a3a4a5a60002L)));
    }

    @Test
    void readReservationWithAndWithoutAHolder() {
        Reservation none = Reservation.parse(HEX.parseHex("0000000700000000"));
        assertEquals(7, none.generation());
        assertEquals(Optional.empty(), none.held());

        Reservation held = Reservation.parse(HEX.parseHex("ffffffff00000010" + "a1a2a3a4a5a60003" + "00000000"
                + "0005" + "0000"));
        assertEquals(0xffffffffL, held.generation());
        assertEquals(new Reservation.Held(0xa1a2a3a4a5a60003L, PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY),
                held.held().orElseThrow());
        assertThrows(IllegalArgumentException.class, () -> Reservation.parse(new byte[4]));
        assertThrows(IllegalArgumentException.class, () -> Reservation.parse(HEX.parseHex("0000000100000010")));
    }

    @Test
    void readKeysListsEveryRegistrationAndReadsOnlyWholeKeysThatArrived() {
        RegisteredKeys keys = RegisteredKeys.parse(HEX.parseHex("0000000200000018"
                + "1111111111110001" + "2222222222220001" + "1111111111110001"));
        assertEquals(2, keys.generation());
        assertEquals(List.of(0x1111111111110001L, 0x2222222222220001L, 0x1111111111110001L), keys.keys());

        RegisteredKeys cut = RegisteredKeys.parse(HEX.parseHex("0000000200000018" + "1111111111110001" + "2222"));
        assertEquals(List.of(0x1111111111110001L), cut.keys());
        assertEquals(List.of(), RegisteredKeys.parse(HEX.parseHex("0000000000000000")).keys());
    }

    @Test
    void reportCapabilitiesTypeMask() {
        // tgt's answer: TMV, WR_EX_AR, EX_AC_RO, WR_EX_RO, EX_AC, WR_EX, EX_AC_AR
        Capabilities tgt = Capabilities.parse(HEX.parseHex("000800" + "80" + "eb" + "01" + "0000"));
        assertTrue(tgt.typeMaskValid());
        assertEquals(Set.of(PrType.values()), tgt.types());
        assertTrue(tgt.supports(PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY));

        Capabilities noType5 = Capabilities.parse(HEX.parseHex("000800" + "80" + "0a" + "00" + "0000"));
        assertFalse(noType5.supports(PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY));
        assertEquals(Set.of(PrType.WRITE_EXCLUSIVE, PrType.EXCLUSIVE_ACCESS), noType5.types());

        Capabilities maskNotValid = Capabilities.parse(HEX.parseHex("000800" + "00" + "00" + "00" + "0000"));
        assertTrue(maskNotValid.supports(PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY), "says nothing either way");
    }

    @Test
    void senseInFixedAndDescriptorFormat() {
        byte[] fixed = HEX.parseHex("7000050000000010000000002400000000000000");
        assertEquals(Optional.of(new Sense(Sense.ILLEGAL_REQUEST, 0x24, 0x00)), Sense.parse(fixed));
        byte[] deferredFixed = HEX.parseHex("f100060000000010000000002a03");
        assertEquals(Optional.of(new Sense(Sense.UNIT_ATTENTION, 0x2a, 0x03)), Sense.parse(deferredFixed));
        byte[] descriptor = HEX.parseHex("720629040000000000");
        assertEquals(Optional.of(new Sense(Sense.UNIT_ATTENTION, 0x29, 0x04)), Sense.parse(descriptor));
        assertEquals(Optional.empty(), Sense.parse(HEX.parseHex("7000")), "too short for its format");
        assertEquals(Optional.empty(), Sense.parse(HEX.parseHex("0000000000000000000000000000")));
        assertEquals("sense key 5h, ASC/ASCQ 24h/00h", Sense.parse(fixed).orElseThrow().toString());
    }

    @Test
    void typeCodes() {
        assertEquals(5, PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY.code());
        assertEquals(PrType.EXCLUSIVE_ACCESS_ALL_REGISTRANTS, PrType.ofCode(8));
        assertThrows(IllegalArgumentException.class, () -> PrType.ofCode(2));
    }

    @Test
    void inquiryAsksForTheStandard36BytesAndReadsVendorAndProductWithoutTheirPadding() {
        assertArrayEquals(new byte[]{0x12, 0, 0, 0, 36, 0}, TargetProduct.cdb());
        byte[] data = new byte[36];
        java.util.Arrays.fill(data, (byte) ' ');
        System.arraycopy("IET".getBytes(java.nio.charset.StandardCharsets.US_ASCII), 0, data, 8, 3);
        System.arraycopy("VIRTUAL-DISK".getBytes(java.nio.charset.StandardCharsets.US_ASCII), 0, data, 16, 12);
        assertEquals(new TargetProduct("IET", "VIRTUAL-DISK"), TargetProduct.parse(data));
        assertThrows(IllegalArgumentException.class, () -> TargetProduct.parse(new byte[20]));
    }
}
