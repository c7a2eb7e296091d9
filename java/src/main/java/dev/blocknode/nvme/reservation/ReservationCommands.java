package dev.blocknode.nvme.reservation;

import dev.blocknode.os.block.NvmePassThrough;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;

/**
 * The four reservation commands as NVMe I/O commands: the opcode, command dword 10 (and 11 for the report) and
 * the data structure each takes, keys little-endian as every NVMe field. Bit positions are the NVMe Base
 * Specification's: in dword 10, bits 2:0 the action, bit 3 IEKEY (Ignore Existing Key), bits 15:8 the type,
 * bits 31:30 CPTPL (Change Persist Through Power Loss State).
 */
final class ReservationCommands {

    static final int REGISTER = 0x0d;
    static final int REPORT = 0x0e;
    static final int ACQUIRE = 0x11;
    static final int RELEASE = 0x15;

    /** Reservation Register's action (RREGA). */
    enum RegisterAction { REGISTER, UNREGISTER, REPLACE }

    /** Reservation Acquire's action (RACQA). */
    enum AcquireAction { ACQUIRE, PREEMPT, PREEMPT_AND_ABORT }

    /** Reservation Release's action (RRELA). */
    enum ReleaseAction { RELEASE, CLEAR }

    private static final int IGNORE_EXISTING_KEY = 1 << 3;
    /** Reservation Report's cdw11 bit 0 (EDS): registrants with their 128-bit host identifiers. */
    private static final int EXTENDED_DATA_STRUCTURE = 1;

    private ReservationCommands() {
    }

    /**
     * Reservation Register. CPTPL stays 00b (no change): as SCSI fencing sets no APTPL, blocknode asks nothing
     * of a target's power-loss persistence, and a target without it (Linux's nvmet) need not refuse the field.
     */
    static NvmePassThrough.Command register(RegisterAction action, boolean ignoreExistingKey, long current,
                                            long next, Duration timeout) {
        int cdw10 = action.ordinal() | (ignoreExistingKey ? IGNORE_EXISTING_KEY : 0);
        return command(REGISTER, cdw10, 0, keys(current, next), timeout);
    }

    /** Reservation Acquire. IEKEY is never set: the specification made it reserved for acquire (nvmet refuses it). */
    static NvmePassThrough.Command acquire(AcquireAction action, ReservationType type, long current, long preempted,
                                           Duration timeout) {
        return command(ACQUIRE, action.ordinal() | type.code() << 8, 0, keys(current, preempted), timeout);
    }

    /** Reservation Release; the type must be the reservation's. */
    static NvmePassThrough.Command release(ReleaseAction action, ReservationType type, long current,
                                           Duration timeout) {
        byte[] data = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(current).array();
        return command(RELEASE, action.ordinal() | type.code() << 8, 0, data, timeout);
    }

    /**
     * Reservation Report into {@code length} bytes (a multiple of 4): dword 10 is the number of dwords less
     * one.
     */
    static NvmePassThrough.Command report(int length, boolean extended, Duration timeout) {
        if (length < 4 || length % 4 != 0) {
            throw new IllegalArgumentException("a report's length is whole dwords, not " + length + " bytes");
        }
        return command(REPORT, length / 4 - 1, extended ? EXTENDED_DATA_STRUCTURE : 0, new byte[length], timeout);
    }

    private static byte[] keys(long first, long second) {
        return ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(first).putLong(second).array();
    }

    private static NvmePassThrough.Command command(int opcode, int cdw10, int cdw11, byte[] data, Duration timeout) {
        return new NvmePassThrough.Command(opcode, new int[] {cdw10, cdw11, 0, 0, 0, 0}, data, timeout);
    }
}
