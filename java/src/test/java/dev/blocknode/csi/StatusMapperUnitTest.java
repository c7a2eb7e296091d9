package dev.blocknode.csi;

import dev.blocknode.logging.Printable;
import dev.blocknode.outcome.VolumeException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The message a caller gets back is escaped and bounded, whatever the domain message quoted. */
class StatusMapperUnitTest {

    @Test
    void aMessageQuotingCallerInputIsEscaped() {
        Status status = StatusMapper.toStatus(VolumeException.notFound("device /dev/x\n2026-01-01T00:00:00Z SEVERE"
                + " forged\0 does not exist")).getStatus();
        assertEquals(Status.Code.NOT_FOUND, status.getCode());
        assertFalse(Printable.hasUnprintable(status.getDescription()), status.getDescription());
        assertTrue(status.getDescription().contains("/dev/x\\n2026"), status.getDescription());
    }

    /** A 93 KB status message, where gRPC's C-core clients take at most 16 KiB. */
    @Test
    void aHugeMessageIsCutWellUnderWhatClientsAccept() {
        String description = StatusMapper.toStatus(VolumeException.invalid("mount failed: " + "opt,".repeat(25_000)))
                .getStatus().getDescription();
        assertTrue(description.length() < Printable.STATUS_MESSAGE_LIMIT + 100, "length " + description.length());
        assertTrue(description.endsWith("more characters cut]"), description);
    }

    @Test
    void anUnexpectedFailureIsEscapedAndCutToo() {
        StatusRuntimeException e = StatusMapper.unexpected("NodeStageVolume",
                new IllegalArgumentException("Nul character not allowed: /dev/\0x\n" + "y".repeat(50_000)));
        String description = e.getStatus().getDescription();
        assertEquals(Status.Code.INTERNAL, e.getStatus().getCode());
        assertFalse(Printable.hasUnprintable(description), description);
        assertTrue(description.length() < Printable.STATUS_MESSAGE_LIMIT + 100, "length " + description.length());
    }
}
