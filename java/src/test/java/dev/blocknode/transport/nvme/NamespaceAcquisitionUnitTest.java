package dev.blocknode.transport.nvme;

import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.FakeNvmeNamespace;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing.FencedOut;
import dev.blocknode.transport.Fencing.Held;
import dev.blocknode.transport.Fencing.Renewed;
import dev.blocknode.transport.Fencing.Unsupported;
import dev.blocknode.transport.san.PrGenerations;
import dev.blocknode.transport.san.TakeoverRule;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static dev.blocknode.transport.nvme.NamespaceRelease.TYPE;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.A;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.B;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.HEAD_A;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.HEAD_B;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The stage's acquisition of a fenced NVMe namespace against an in-memory namespace two nodes reach
 * (FakeNvmeNamespace, nvmet's rules): node A stages, node B is the other node, with the takeover rule on a clock the
 * test moves.
 */
class NamespaceAcquisitionUnitTest {

    private static final Duration TAKEOVER_AFTER = Duration.ofSeconds(60);
    private static final FenceKey NODE_A = A.withGeneration(0);

    private final TwoNodeNamespace nodes = new TwoNodeNamespace();
    private final FakeNvmeNamespace namespace = nodes.namespace;
    private final NvmeReservations reservations = nodes.reservations;
    private final AtomicLong nanos = new AtomicLong();
    private final PrGenerations generations = new PrGenerations();
    private final NamespaceAcquisition acquisition = new NamespaceAcquisition(reservations,
            new TakeoverRule(TAKEOVER_AFTER, nanos::get), generations);
    private final NamespaceRenewal renewal = new NamespaceRenewal(reservations, generations);

    @Test
    void aFreeNamespaceIsRegisteredAndAcquiredWithType3() throws Exception {
        Held held = assertInstanceOf(Held.class, acquisition.acquire("vol-1", HEAD_A, NODE_A));

        assertEquals(NODE_A.withGeneration(1), held.key());
        assertEquals(Optional.empty(), held.tookOverFrom());
        assertEquals(Map.of("nodeA", held.key().value()), namespace.registrations());
        assertEquals("nodeA", namespace.holder());
        assertEquals(3, namespace.holderType(), "Write Exclusive - Registrants Only");
        assertFalse(namespace.writeAllowed("nodeB"));
    }

    @Test
    void aNamespaceWithoutReservationsIsUnsupportedAndNothingIsSent() throws Exception {
        namespace.withoutReservations();

        Unsupported unsupported = assertInstanceOf(Unsupported.class, acquisition.acquire("vol-1", HEAD_A, NODE_A));

        assertTrue(unsupported.why().contains("does not support reservations"), unsupported.why());
        assertEquals(1, namespace.log().size(), "the report only: " + namespace.log());
    }

    @Test
    void anAliveHolderIsNeverTakenOver() throws Exception {
        nodes.holds(HEAD_B, B);

        VolumeException first = assertThrows(VolumeException.class, () -> acquisition.acquire("vol-1", HEAD_A, NODE_A));
        nanos.addAndGet(TAKEOVER_AFTER.toNanos());
        reservations.replace(HEAD_B, B.value(), B.next().value()); // B renews: it is alive
        VolumeException again = assertThrows(VolumeException.class, () -> acquisition.acquire("vol-1", HEAD_A, NODE_A));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, first.outcome());
        assertTrue(first.getMessage().contains(FenceKey.hex(B.value())), first.getMessage());
        assertTrue(again.getMessage().contains(FenceKey.hex(B.next().value())), again.getMessage());
        assertTrue(again.getMessage().contains("changed"), again.getMessage());
        assertEquals("nodeB", namespace.holder());
        assertEquals(Map.of("nodeB", B.next().value()), namespace.registrations(), "node A registered nothing");
    }

    @Test
    void aDeadHolderIsPreemptedAndAbortedOnceItsKeyStoodStillForTheTakeoverTime() throws Exception {
        nodes.holds(HEAD_B, B);
        assertThrows(VolumeException.class, () -> acquisition.acquire("vol-1", HEAD_A, NODE_A));
        nanos.addAndGet(TAKEOVER_AFTER.toNanos() - 1);
        assertThrows(VolumeException.class, () -> acquisition.acquire("vol-1", HEAD_A, NODE_A), "not yet");
        nanos.addAndGet(1);

        Held held = assertInstanceOf(Held.class, acquisition.acquire("vol-1", HEAD_A, NODE_A));

        assertEquals(Optional.of(FenceKey.hex(B.value())), held.tookOverFrom());
        assertEquals("nodeA", namespace.holder());
        assertEquals(Map.of("nodeA", held.key().value()), namespace.registrations());
        assertFalse(namespace.writeAllowed("nodeB"), "the old holder's writes are refused at the target");
        assertTrue(namespace.log().stream().anyMatch(seen -> seen.host().equals("nodeA") && seen.opcode() == 0x11
                && (seen.cdw10() & 0x7) == 2 && seen.secondKey() == B.value()),
                "Preempt and Abort: " + namespace.log());
        FencedOut out = assertInstanceOf(FencedOut.class, renewal.renew("vol-1", HEAD_B, B),
                "the old holder's next renewal");
        assertEquals(Optional.of(held.key().value()), out.holder());
    }

    @Test
    void aRacerAndAStaleRegistrantAreRemovedSoNoOtherRegistrantCanWrite() throws Exception {
        Path headC = Path.of("/dev/nvme2n1");
        namespace.device(headC, "nodeC");
        FenceKey c = FenceKey.forNode("node-c").withGeneration(4);
        namespace.registered("nodeB", B.value()); // a racer that registered and lost
        namespace.registered("nodeC", c.value()); // a node that died between Register and Acquire

        Held held = assertInstanceOf(Held.class, acquisition.acquire("vol-1", HEAD_A, NODE_A));

        assertEquals(Map.of("nodeA", held.key().value()), namespace.registrations());
        assertEquals("nodeA", namespace.holder());
        assertFalse(namespace.writeAllowed("nodeB"));
        assertFalse(namespace.writeAllowed("nodeC"));
    }

    @Test
    void aRacerThatAcquiresWhileStaleRegistrationsAreRemovedKeepsItAndThisStageIsRefused() throws Exception {
        namespace.registered("nodeB", B.value()); // B registered and is about to acquire: a racer
        // B's Acquire lands in the instant A has released to remove B's registration (nvmet ignores a holder's
        // Preempt of others); A preempting B's key now would take B's fresh reservation over.
        namespace.afterNext("nodeA", 0x15, () -> reservations.acquire(HEAD_B, B.value(), TYPE));

        VolumeException refused = assertThrows(VolumeException.class,
                () -> acquisition.acquire("vol-1", HEAD_A, NODE_A));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome(), refused.getMessage());
        assertTrue(refused.getMessage().contains(FenceKey.hex(B.value())), refused.getMessage());
        assertEquals("nodeB", namespace.holder(), "the racer keeps what it acquired");
        assertEquals(Map.of("nodeB", B.value()), namespace.registrations(), "nothing of node A is left");
    }

    @Test
    void aStageWhoseReservationARacerPreemptedIsRefusedNotHeld() throws Exception {
        namespace.registered("nodeB", B.value());
        // Right after A's Acquire, B (which had seen the namespace free a moment earlier) preempts A's key: B holds.
        namespace.afterNext("nodeA", 0x11, () -> reservations.preempt(HEAD_B, B.value(),
                namespace.registrations().get("nodeA"), TYPE, false));

        VolumeException refused = assertThrows(VolumeException.class,
                () -> acquisition.acquire("vol-1", HEAD_A, NODE_A));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome(), refused.getMessage());
        assertEquals("nodeB", namespace.holder());
        assertFalse(namespace.registrations().containsKey("nodeA"));
        assertFalse(namespace.writeAllowed("nodeA"));
    }

    @Test
    void aPluginRestartReRegistersPastItsOwnOldGeneration() throws Exception {
        nodes.holds(HEAD_A, A.withGeneration(41));

        Held held = assertInstanceOf(Held.class, acquisition.acquire("vol-1", HEAD_A, NODE_A));

        assertEquals(A.withGeneration(42), held.key());
        assertEquals(Map.of("nodeA", A.withGeneration(42).value()), namespace.registrations());
        assertEquals("nodeA", namespace.holder());
    }

    @Test
    void aTargetRestartWithoutPersistenceIsAcquiredAgainByTheNextRenewal() throws Exception {
        Held held = assertInstanceOf(Held.class, acquisition.acquire("vol-1", HEAD_A, NODE_A));
        namespace.restart();

        assertEquals(new Renewed(held.key().next()), renewal.renew("vol-1", HEAD_A, held.key()));

        assertEquals(Map.of("nodeA", held.key().next().value()), namespace.registrations());
        assertEquals("nodeA", namespace.holder());
        assertEquals(3, namespace.holderType());
    }

    @Test
    void anEmptyNamespaceAboveTheFloorIsATakeoverAndReleaseNotARestart() throws Exception {
        Held held = assertInstanceOf(Held.class, acquisition.acquire("vol-1", HEAD_A, NODE_A));
        reservations.register(HEAD_B, B.value());
        reservations.preempt(HEAD_B, B.value(), held.key().value(), NamespaceRelease.TYPE, false);
        reservations.unregister(HEAD_B, B.value());

        assertInstanceOf(FencedOut.class, renewal.renew("vol-1", HEAD_A, held.key()));
        assertEquals(Map.of(), namespace.registrations(), "node A did not register itself back");
    }
}
