package dev.blocknode.nvme.reservation;

import dev.blocknode.nvme.reservation.ReservationCommands.AcquireAction;
import dev.blocknode.nvme.reservation.ReservationCommands.RegisterAction;
import dev.blocknode.nvme.reservation.ReservationCommands.ReleaseAction;
import dev.blocknode.os.block.NvmePassThrough;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The reservation commands byte for byte, against the NVMe Base Specification's fields written out by hand. */
class ReservationCommandsUnitTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final long KEY = 0x0102030405060708L;
    private static final long OTHER = 0x1112131415161718L;

    @Test
    void registerCarriesTheActionAndIekeyInDword10AndBothKeysLittleEndian() {
        NvmePassThrough.Command replace = ReservationCommands.register(RegisterAction.REPLACE, true, KEY, OTHER,
                TIMEOUT);
        assertEquals(0x0d, replace.opcode());
        assertArrayEquals(new int[] {0x0000000a, 0, 0, 0, 0, 0}, replace.dwords(),
                "RREGA 010b (replace), IEKEY bit 3, CPTPL 00b (no change)");
        assertEquals("0807060504030201" + "1817161514131211", HexFormat.of().formatHex(replace.data()),
                "CRKEY then NRKEY, each 8 bytes little-endian");
        assertFalse(replace.receives(), "opcode bits 1:0 01b: data to the controller");
        assertEquals(0x00000000, ReservationCommands.register(RegisterAction.REGISTER, false, 0, KEY, TIMEOUT)
                .dwords()[0]);
        assertEquals(0x00000001, ReservationCommands.register(RegisterAction.UNREGISTER, false, KEY, 0, TIMEOUT)
                .dwords()[0]);
    }

    @Test
    void acquireCarriesTheActionAndTheTypeAndNeverIekey() {
        NvmePassThrough.Command acquire = ReservationCommands.acquire(AcquireAction.ACQUIRE,
                ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, KEY, 0, TIMEOUT);
        assertEquals(0x11, acquire.opcode());
        assertArrayEquals(new int[] {0x00000300, 0, 0, 0, 0, 0}, acquire.dwords(), "RTYPE 3 in bits 15:8");
        assertEquals("0807060504030201" + "0000000000000000", HexFormat.of().formatHex(acquire.data()),
                "CRKEY then PRKEY");
        NvmePassThrough.Command preempt = ReservationCommands.acquire(AcquireAction.PREEMPT_AND_ABORT,
                ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, KEY, OTHER, TIMEOUT);
        assertEquals(0x00000302, preempt.dwords()[0], "RACQA 010b: preempt and abort");
        assertEquals("0807060504030201" + "1817161514131211", HexFormat.of().formatHex(preempt.data()));
        assertEquals(0x00000301, ReservationCommands.acquire(AcquireAction.PREEMPT,
                ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, KEY, OTHER, TIMEOUT).dwords()[0]);
    }

    @Test
    void releaseCarriesTheTypeAndOneKey() {
        NvmePassThrough.Command release = ReservationCommands.release(ReleaseAction.RELEASE,
                ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, KEY, TIMEOUT);
        assertEquals(0x15, release.opcode());
        assertArrayEquals(new int[] {0x00000300, 0, 0, 0, 0, 0}, release.dwords());
        assertEquals("0807060504030201", HexFormat.of().formatHex(release.data()));
        assertEquals(0x00000301, ReservationCommands.release(ReleaseAction.CLEAR,
                ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, KEY, TIMEOUT).dwords()[0], "RRELA 001b: clear");
    }

    @Test
    void reportAsksForWholeDwordsLessOneAndTheExtendedStructureInDword11() {
        NvmePassThrough.Command report = ReservationCommands.report(2112, true, TIMEOUT);
        assertEquals(0x0e, report.opcode());
        assertArrayEquals(new int[] {527, 1, 0, 0, 0, 0}, report.dwords(), "NUMD 0-based; EDS bit 0");
        assertEquals(2112, report.data().length);
        assertTrue(report.receives(), "opcode bits 1:0 10b: data from the controller");
        assertEquals(0, ReservationCommands.report(24, false, TIMEOUT).dwords()[1]);
        assertThrows(IllegalArgumentException.class, () -> ReservationCommands.report(30, true, TIMEOUT));
    }
}
