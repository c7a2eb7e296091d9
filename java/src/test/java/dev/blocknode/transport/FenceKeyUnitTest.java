package dev.blocknode.transport;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A node's reservation key: its tag from the node id, its generation, and what a takeover preempts. */
class FenceKeyUnitTest {

    private static final FenceKey A = FenceKey.forNode("node-a");
    private static final FenceKey B = FenceKey.forNode("node-b");

    @Test
    void aKeyIsItsNodesTagAndAGeneration() {
        FenceKey key = A.withGeneration(7);
        assertEquals(key, FenceKey.of(key.value()));
        assertTrue(A.isOurs(key.value()));
        assertFalse(A.isOurs(B.withGeneration(7).value()));
        assertEquals(A.withGeneration(8), key.next());
    }

    @Test
    void aTakeoverPreemptsTheHoldersOtherKeysFirstAndItsHeldKeyLast() {
        long held = A.withGeneration(5).value();
        long lostReply = A.withGeneration(6).value(); // a renewal whose reply was lost left a second key
        long other = B.withGeneration(2).value();     // another node's registration: not the holder's to lose

        assertEquals(List.of(lostReply, held), FenceKey.takeoverVictims(held, List.of(held, other, lostReply,
                lostReply)));
        assertEquals(List.of(held), FenceKey.takeoverVictims(held, List.of()));
    }
}
