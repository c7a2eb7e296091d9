package dev.blocknode.transport.nvme;

import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.testing.FakeNvmeNamespace;
import dev.blocknode.transport.FenceKey;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Map;

import static dev.blocknode.transport.nvme.TwoNodeNamespace.A;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.B;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.HEAD_A;
import static dev.blocknode.transport.nvme.TwoNodeNamespace.HEAD_B;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The release of a fenced NVMe namespace at unstage against an in-memory namespace that two nodes reach
 * (FakeNvmeNamespace, which decodes the commands by nvmet's rules).
 */
class NamespaceReleaseUnitTest {

    private final TwoNodeNamespace nodes = new TwoNodeNamespace();
    private final FakeNvmeNamespace namespace = nodes.namespace;
    private final NvmeReservations reservations = nodes.reservations;
    private final NamespaceRelease release = new NamespaceRelease(reservations);

    @Test
    void theHolderReleasesAndUnregistersWithItsStagedKey() throws IOException {
        nodes.holds(HEAD_A, A);

        release.release("vol-1", HEAD_A, A);

        assertNull(namespace.holder());
        assertEquals(Map.of(), namespace.registrations());
        assertTrue(namespace.writeAllowed("nodeB"), "nothing holds the namespace any more");
    }

    @Test
    void aKeyTheRenewalMovedOnIsReleasedWithTheKeyTheNamespaceShows() throws IOException {
        nodes.holds(HEAD_A, A);
        reservations.replace(HEAD_A, A.value(), A.withGeneration(9).value());

        release.release("vol-1", HEAD_A, A);

        assertNull(namespace.holder());
        assertEquals(Map.of(), namespace.registrations());
    }

    @Test
    void aNodeFencedOutTouchesNoOtherNodesKeyOrReservation() throws IOException {
        nodes.holds(HEAD_B, B);

        release.release("vol-1", HEAD_A, A);

        assertEquals("nodeB", namespace.holder());
        assertEquals(Map.of("nodeB", B.value()), namespace.registrations());
        assertTrue(namespace.log().stream().filter(seen -> seen.host().equals("nodeA"))
                .allMatch(seen -> seen.opcode() == 0x0e || FenceKey.tagOf(seen.firstKey()) == A.tag()),
                "node A sent no command with another node's key: " + namespace.log());
    }

    @Test
    void noPathLeavesEverythingAsItWasAndDoesNotThrow() throws IOException {
        nodes.holds(HEAD_A, A);
        namespace.dead("nodeA");

        release.release("vol-1", HEAD_A, A);

        assertEquals("nodeA", namespace.holder());
        assertEquals(Map.of("nodeA", A.value()), namespace.registrations());
        assertEquals(0, namespace.openChannels());
    }
}
