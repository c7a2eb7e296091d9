package dev.blocknode.transport.nvme;

import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.testing.FakeNvmeNamespace;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing.FencedOut;
import dev.blocknode.transport.Fencing.Renewal;
import dev.blocknode.transport.Fencing.Renewed;
import dev.blocknode.transport.Fencing.Unreachable;
import dev.blocknode.transport.san.PrGenerations;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Map;
import java.util.Optional;

import static dev.blocknode.nvme.reservation.ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.A;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.B;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.HEAD_A;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.HEAD_B;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The renewal of a fenced NVMe namespace against an in-memory namespace that two nodes reach (FakeNvmeNamespace,
 * which decodes the commands by nvmet's rules): node A holds it through its head device, node B is the other node.
 */
class NamespaceRenewalUnitTest {

    private final TwoNodeNamespace nodes = new TwoNodeNamespace();
    private final FakeNvmeNamespace namespace = nodes.namespace;
    private final NvmeReservations reservations = nodes.reservations;
    private final PrGenerations generations = new PrGenerations();
    private final NamespaceRenewal renewal = new NamespaceRenewal(reservations, generations);

    @Test
    void aRenewalMovesThisHostsKeyToTheNextGenerationAndKeepsTheReservation() throws IOException {
        nodes.holds(HEAD_A, A);

        Renewal renewed = renewal.renew("vol-1", HEAD_A, A);

        assertEquals(new Renewed(A.next()), renewed);
        assertEquals(Map.of("nodeA", A.next().value()), namespace.registrations());
        assertEquals("nodeA", namespace.holder());
        assertEquals(3, namespace.holderType());
        assertFalse(namespace.writeAllowed("nodeB"));
    }

    @Test
    void aNodePreemptedByAnotherIsFencedOutNamingTheHolderAndDoesNotRegisterItselfBack() throws IOException {
        nodes.holds(HEAD_A, A);
        reservations.register(HEAD_B, B.value());
        reservations.preempt(HEAD_B, B.value(), A.value(), WRITE_EXCLUSIVE_REGISTRANTS_ONLY, true);

        Renewal fenced = renewal.renew("vol-1", HEAD_A, A);

        FencedOut out = assertInstanceOf(FencedOut.class, fenced);
        assertEquals(Optional.of(B.value()), out.holder());
        assertTrue(out.why().contains(FenceKey.hex(B.value())), out.why());
        assertEquals(Map.of("nodeB", B.value()), namespace.registrations(), "node A registered nothing back");
        assertEquals("nodeB", namespace.holder());
        assertFalse(namespace.writeAllowed("nodeA"), "the fenced node's writes stay refused at the target");
    }

    @Test
    void aNodeFencedOutTakesBackTheRegistrationItStillHasThere() throws IOException {
        reservations.register(HEAD_A, A.value());
        reservations.register(HEAD_B, B.value());
        reservations.acquire(HEAD_B, B.value(), WRITE_EXCLUSIVE_REGISTRANTS_ONLY);

        FencedOut out = assertInstanceOf(FencedOut.class, renewal.renew("vol-1", HEAD_A, A.withGeneration(5)));

        assertEquals(Optional.of(B.value()), out.holder());
        assertEquals(Map.of("nodeB", B.value()), namespace.registrations(), "under type 3 a registrant could write");
        assertFalse(namespace.writeAllowed("nodeA"));
    }

    @Test
    void aReservationGoneWithNothingOfThisNodeLeftIsFencedOutWithNoHolder() throws IOException {
        nodes.holds(HEAD_A, A);
        namespace.registered("nodeB", B.value());
        reservations.preempt(HEAD_B, B.value(), A.value(), WRITE_EXCLUSIVE_REGISTRANTS_ONLY, false);
        reservations.release(HEAD_B, B.value(), WRITE_EXCLUSIVE_REGISTRANTS_ONLY);

        FencedOut out = assertInstanceOf(FencedOut.class, renewal.renew("vol-1", HEAD_A, A));

        assertEquals(Optional.empty(), out.holder());
        assertFalse(namespace.registrations().containsKey("nodeA"));
    }

    @Test
    void aRenewalWhoseAnswerWasLostIsMovedOnFromTheKeyTheNamespaceShows() throws IOException {
        nodes.holds(HEAD_A, A);
        reservations.replace(HEAD_A, A.value(), A.next().value()); // took effect; the plugin never heard

        assertEquals(new Renewed(A.next()), renewal.renew("vol-1", HEAD_A, A), "already at the next generation");

        reservations.replace(HEAD_A, A.next().value(), A.withGeneration(7).value());
        assertEquals(new Renewed(A.next()), renewal.renew("vol-1", HEAD_A, A), "at another generation");
        assertEquals(Map.of("nodeA", A.next().value()), namespace.registrations());
        assertEquals("nodeA", namespace.holder());
    }

    @Test
    void noPathIsUnreachableAndTheKeyStays() throws IOException {
        nodes.holds(HEAD_A, A);
        namespace.dead("nodeA");

        Unreachable unreachable = assertInstanceOf(Unreachable.class, renewal.renew("vol-1", HEAD_A, A));

        assertTrue(unreachable.why().contains(HEAD_A.toString()), unreachable.why());
        assertEquals(Map.of("nodeA", A.value()), namespace.registrations());
        assertEquals(0, namespace.openChannels());
    }
}
