package dev.blocknode.scsi.reservation;

import java.util.EnumSet;
import java.util.Set;

/**
 * PERSISTENT RESERVE IN / REPORT CAPABILITIES's answer, the part fencing needs: whether the PERSISTENT
 * RESERVATION TYPE MASK is valid (TMV, byte 3 bit 7) and which types it lists (byte 4: WR_EX_AR bit 7,
 * EX_AC_RO 6, WR_EX_RO 5, EX_AC 3, WR_EX 1; byte 5: EX_AC_AR bit 0).
 */
public record Capabilities(boolean typeMaskValid, Set<PrType> types) {

    public static final int ALLOCATION = 8;

    public Capabilities {
        types = types.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(types));
    }

    public static Capabilities parse(byte[] data) {
        if (data.length < 6) {
            throw new IllegalArgumentException("REPORT CAPABILITIES returned " + data.length + " bytes, fewer than 6");
        }
        boolean valid = (data[3] & 0x80) != 0;
        Set<PrType> types = EnumSet.noneOf(PrType.class);
        int mask = data[4] & 0xff;
        if ((mask & 0x80) != 0) types.add(PrType.WRITE_EXCLUSIVE_ALL_REGISTRANTS);
        if ((mask & 0x40) != 0) types.add(PrType.EXCLUSIVE_ACCESS_REGISTRANTS_ONLY);
        if ((mask & 0x20) != 0) types.add(PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
        if ((mask & 0x08) != 0) types.add(PrType.EXCLUSIVE_ACCESS);
        if ((mask & 0x02) != 0) types.add(PrType.WRITE_EXCLUSIVE);
        if ((data[5] & 0x01) != 0) types.add(PrType.EXCLUSIVE_ACCESS_ALL_REGISTRANTS);
        return new Capabilities(valid, types);
    }

    /** Whether the device says it supports {@code type}; a device whose mask is not valid says nothing. */
    public boolean supports(PrType type) {
        return !typeMaskValid || types.contains(type);
    }
}
