package dev.blocknode.nvme.reservation;

import dev.blocknode.testing.FakeNvmeNamespace;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.blocknode.nvme.reservation.ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reservation commands against an in-memory namespace that two nodes reach (FakeNvmeNamespace, which decodes
 * the commands itself): the steps SCSI fencing takes, as NVMe commands, and what the namespace then holds.
 */
class NvmeReservationsUnitTest {

    private static final Path A = Path.of("/dev/nvme0n1");
    private static final Path B = Path.of("/dev/nvme1n1");
    private static final long KEY_A = 0xa1a1a1a1a1a10001L;
    private static final long KEY_B = 0xb2b2b2b2b2b20001L;

    private final FakeNvmeNamespace namespace = new FakeNvmeNamespace(1).device(A, "nodeA").device(B, "nodeB");
    private final NvmeReservations reservations = new NvmeReservations(namespace, namespace.check(),
            Duration.ofSeconds(10));

    @Test
    void aNodeRegistersAcquiresWriteExclusiveRegistrantsOnlyAndTheReportShowsIt() throws IOException {
        reservations.register(A, KEY_A);
        reservations.acquire(A, KEY_A, WRITE_EXCLUSIVE_REGISTRANTS_ONLY);

        ReservationStatus status = reservations.report(B);
        assertEquals(Map.of("nodeA", KEY_A), namespace.registrations());
        assertEquals("nodeA", namespace.holder());
        assertEquals(3, namespace.holderType());
        assertEquals(java.util.Optional.of(WRITE_EXCLUSIVE_REGISTRANTS_ONLY), status.type());
        assertEquals(KEY_A, status.holder().orElseThrow().key(), "read through the other node's device");
        assertEquals(List.of(KEY_A), status.keys());
        assertTrue(namespace.writeAllowed("nodeA"));
        assertFalse(namespace.writeAllowed("nodeB"), "an unregistered host's writes are refused at the target");
        assertEquals(0, namespace.openChannels());
    }

    @Test
    void theRenewalReplacesTheKeyAndANodePreemptedCannotRenewItselfBack() throws IOException {
        reservations.register(A, KEY_A);
        reservations.acquire(A, KEY_A, WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
        reservations.replace(A, KEY_A, KEY_A + 1);
        assertEquals(KEY_A + 1, reservations.report(A).holder().orElseThrow().key(), "the holder keeps it");

        reservations.register(B, KEY_B);
        long before = reservations.report(B).generation();
        reservations.preempt(B, KEY_B, KEY_A + 1, WRITE_EXCLUSIVE_REGISTRANTS_ONLY, true);

        assertEquals("nodeB", namespace.holder());
        assertEquals(Map.of("nodeB", KEY_B), namespace.registrations());
        assertTrue(reservations.report(B).generation() > before, "a preemption raises the generation");
        assertThrows(NvmeCommandException.ReservationConflict.class,
                () -> reservations.replace(A, KEY_A + 1, KEY_A + 2));
        assertFalse(namespace.writeAllowed("nodeA"));
        FakeNvmeNamespace.Seen preempt = namespace.log().stream().filter(seen -> seen.opcode() == 0x11)
                .reduce((first, second) -> second).orElseThrow();
        assertEquals(new FakeNvmeNamespace.Seen("nodeB", 0x11, 0x302, KEY_B, KEY_A + 1), preempt);
    }

    @Test
    void anotherHoldersReservationIsAConflictForAcquire() throws IOException {
        reservations.register(B, KEY_B);
        reservations.acquire(B, KEY_B, WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
        reservations.register(A, KEY_A);

        assertThrows(NvmeCommandException.ReservationConflict.class,
                () -> reservations.acquire(A, KEY_A, WRITE_EXCLUSIVE_REGISTRANTS_ONLY));
        assertEquals("nodeB", namespace.holder());
    }

    @Test
    void registeringIgnoringTheExistingKeyWorksRegisteredOrNotAndZeroUnregisters() throws IOException {
        reservations.registerIgnoringExisting(A, KEY_A);
        assertEquals(Map.of("nodeA", KEY_A), namespace.registrations(), "not registered: Register");
        reservations.registerIgnoringExisting(A, KEY_A + 5);
        assertEquals(Map.of("nodeA", KEY_A + 5), namespace.registrations(), "another key: Replace with IEKEY");
        reservations.acquire(A, KEY_A + 5, WRITE_EXCLUSIVE_REGISTRANTS_ONLY);

        reservations.registerIgnoringExisting(A, 0);
        assertEquals(Map.of(), namespace.registrations());
        assertNull(namespace.holder(), "unregistering the holder releases a registrants-only reservation");
        reservations.registerIgnoringExisting(A, 0);
        assertEquals(Map.of(), namespace.registrations(), "already unregistered: nothing to do, no error");
    }

    @Test
    void releaseAndUnregisterGiveTheNamespaceBack() throws IOException {
        reservations.register(A, KEY_A);
        reservations.acquire(A, KEY_A, WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
        reservations.release(A, KEY_A, WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
        assertNull(namespace.holder());
        reservations.unregister(A, KEY_A);
        assertEquals(Map.of(), namespace.registrations());
        assertTrue(reservations.report(A).registrants().isEmpty());
    }

    @Test
    void aControllerWithoutTheExtendedStructureIsAskedForThePlainOne() throws IOException {
        namespace.withPlainReportOnly();
        reservations.register(A, KEY_A);

        ReservationStatus status = reservations.report(A);

        assertEquals(List.of(KEY_A), status.keys());
        long reports = namespace.log().stream().filter(seen -> seen.opcode() == 0x0e).count();
        assertEquals(2, reports, "extended first, refused, then plain");
    }

    @Test
    void aReportWithMoreRegistrantsThanRoomIsAskedAgainWithRoom() throws IOException {
        for (int host = 0; host < NvmeReservations.REPORTED_REGISTRANTS + 3; host++) {
            namespace.registered("host" + host, 0x100L + host);
        }
        ReservationStatus status = reservations.report(A);
        assertEquals(NvmeReservations.REPORTED_REGISTRANTS + 3, status.keys().size());
        assertTrue(status.complete());
    }

    @Test
    void aNamespaceWithoutReservationsIsNotSupported() {
        namespace.withoutReservations();
        assertThrows(NvmeCommandException.NotSupported.class, () -> reservations.register(A, KEY_A));
        assertThrows(NvmeCommandException.NotSupported.class, () -> reservations.report(A));
    }

    @Test
    void aDeviceWhoseNameLeadsElsewhereGetsNoCommand() {
        namespace.leadsElsewhere(A);
        IOException refused = assertThrows(IOException.class, () -> reservations.register(A, KEY_A));
        assertTrue(refused.getMessage().contains("another namespace"), refused.getMessage());
        assertEquals(List.of(), namespace.log());
        assertEquals(0, namespace.openChannels(), "the descriptor is closed again");
    }

    @Test
    void aFailedPathIsAnIoExceptionThatIsNoConflict() {
        namespace.dead("nodeA");
        IOException failed = assertThrows(IOException.class, () -> reservations.register(A, KEY_A));
        assertFalse(failed instanceof NvmeCommandException.ReservationConflict);
        assertEquals(0, namespace.openChannels());
    }
}
