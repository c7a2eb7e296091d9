package dev.blocknode.transport.san;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.testing.FakeScsiTarget;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fencing protocol of two nodes on one LUN, against an in-memory SPC-4 target: each node its own plugin
 * (its own takeover memory), each path device its own I_T nexus.
 */
class LunFencingUnitTest {

    private static final Duration TAKEOVER = Duration.ofSeconds(60);
    private static final Wwid WWID = Wwid.naa("6001405aaaabbbbccccddddeeeeffff0");
    private static final Attachment LUN = new Attachment("iscsi", Path.of("/dev/dm-0"), new DeviceNumber(253, 0),
            "3600", Map.of());

    private final FakeScsiTarget target = new FakeScsiTarget();
    private final AtomicLong nanos = new AtomicLong();
    private final Node a = new Node("node-a", "a1", "a2");
    private final Node b = new Node("node-b", "b1");

    /** A node: its key, its paths to the LUN (each a nexus of the target), its own protocol instance. */
    private final class Node {
        final FenceKey key;
        final List<LunPath> paths = new ArrayList<>();
        LunFencing fencing;

        Node(String nodeId, String... nexuses) {
            key = FenceKey.forNode(nodeId);
            for (String nexus : nexuses) {
                Path device = Path.of("/dev/sd-" + nexus);
                target.path(device, nexus);
                paths.add(new LunPath(device, WWID));
            }
            fencing = new LunFencing(new PersistentReservations(target, target.check(), Duration.ofSeconds(10)),
                    attachment -> List.copyOf(paths), new TakeoverRule(TAKEOVER, nanos::get));
        }

        /** The plugin restarted: a new protocol instance, nothing in memory. */
        void restart() {
            fencing = new LunFencing(new PersistentReservations(target, target.check(), Duration.ofSeconds(10)),
                    attachment -> List.copyOf(paths), new TakeoverRule(TAKEOVER, nanos::get));
        }

        Fencing.Held acquire() throws VolumeException {
            return assertInstanceOf(Fencing.Held.class, fencing.acquire("vol-1", LUN, key));
        }

        VolumeException refused() {
            VolumeException e = assertThrows(VolumeException.class, () -> fencing.acquire("vol-1", LUN, key));
            assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, e.outcome(), e.getMessage());
            return e;
        }

        boolean registered() {
            return target.registrations().values().stream().anyMatch(key::isOurs);
        }
    }

    /** B is refused, A's keys then stand still for the takeover time, and B's retry takes the LUN. */
    private FenceKey takenOverByB() throws VolumeException {
        b.refused();
        advance(TAKEOVER);
        return b.acquire().key();
    }

    private void advance(Duration by) {
        nanos.addAndGet(by.toNanos());
    }

    @Test
    void aStageRegistersEveryPathAndReservesType5() throws Exception {
        Fencing.Held held = a.acquire();

        assertEquals(2, held.paths());
        assertEquals(Map.of("a1", held.key().value(), "a2", held.key().value()), target.registrations());
        assertEquals(Optional.of(held.key().value()), target.holderKey());
        assertEquals(5, target.holderType());
        assertTrue(target.writeAllowed("a2"), "a registrant writes under type 5");
        assertFalse(target.writeAllowed("b1"));
        assertEquals(a.key.tag(), held.key().tag());
        assertEquals(1, held.key().generation());
    }

    @Test
    void anotherNodesStageIsRefusedNamingTheHoldersKeyAndRegistersNothing() throws Exception {
        Fencing.Held held = a.acquire();

        VolumeException refused = b.refused();

        assertTrue(refused.getMessage().contains("reservation key " + held.key()), refused.getMessage());
        assertTrue(refused.getMessage().contains("unchanged for 60 s"), refused.getMessage());
        assertFalse(b.registered());
        assertEquals(List.of(), target.log().stream().filter(s -> s.nexus().equals("b1") && s.opcode() == 0x5f)
                .toList(), "B sent no PERSISTENT RESERVE OUT");
    }

    @Test
    void afterTheHolderReleasesTheOtherNodeStages() throws Exception {
        a.acquire();
        a.fencing.release("vol-1", LUN, a.key);
        assertEquals(Map.of(), target.registrations());
        assertEquals(Optional.empty(), target.holder());

        Fencing.Held held = b.acquire();
        assertEquals(Optional.of(held.key().value()), target.holderKey());
    }

    @Test
    void twoStagersRaceAndTheLoserTakesItsRegistrationBack() throws Exception {
        // B registers, then A reserves before B's RESERVE arrives.
        target.beforeOut("b1", 0x01, seen -> {
            try {
                a.acquire();
            } catch (VolumeException e) {
                throw new AssertionError(e);
            }
        });

        VolumeException refused = b.refused();

        assertTrue(refused.getMessage().contains("another node reserved it while this one was registering"),
                refused.getMessage());
        assertFalse(b.registered());
        assertTrue(a.registered());
        assertEquals("a1", target.holder().orElseThrow());
    }

    @Test
    void aRegistrationThatHoldsNothingIsRemovedByTheNextStager() throws Exception {
        // A node died between its REGISTER and its RESERVE: under type 5 it could still write.
        new PersistentReservations(target, target.check(), Duration.ofSeconds(1)).registerIgnoringExisting(b.paths.get(0),
                b.key.withGeneration(7).value());

        a.acquire();

        assertFalse(b.registered());
        assertFalse(target.writeAllowed("b1"));
    }

    @Test
    void renewalMovesEveryPathToTheNextGeneration() throws Exception {
        FenceKey first = a.acquire().key();

        Fencing.Renewal renewal = a.fencing.renew("vol-1", LUN, first);

        FenceKey next = assertInstanceOf(Fencing.Renewed.class, renewal).key();
        assertEquals(first.generation() + 1, next.generation());
        assertEquals(Map.of("a1", next.value(), "a2", next.value()), target.registrations());
        assertEquals(Optional.of(next.value()), target.holderKey(), "the holder's re-registration keeps it the holder");
    }

    @Test
    void aDeadPathIsLeftForTheNextRoundAndCaughtUpThen() throws Exception {
        FenceKey first = a.acquire().key();
        target.dead("a2", true);
        FenceKey second = assertInstanceOf(Fencing.Renewed.class, a.fencing.renew("vol-1", LUN, first)).key();
        target.dead("a2", false);

        FenceKey third = assertInstanceOf(Fencing.Renewed.class, a.fencing.renew("vol-1", LUN, second)).key();

        assertEquals(Map.of("a1", third.value(), "a2", third.value()), target.registrations());
    }

    @Test
    void allPathsDeadIsUnreachableNotFenced() throws Exception {
        FenceKey first = a.acquire().key();
        target.dead("a1", true);
        target.dead("a2", true);

        assertInstanceOf(Fencing.Unreachable.class, a.fencing.renew("vol-1", LUN, first));
    }

    @Test
    void theTakeoverWaitsForTheHoldersKeysToStandStillAndRestartsWhenTheyMove() throws Exception {
        FenceKey current = a.acquire().key();
        assertTrue(b.refused().getMessage().contains("first seen now"));
        advance(Duration.ofSeconds(30));
        assertTrue(b.refused().getMessage().contains("unchanged for 30 s of the 60 s"));

        current = assertInstanceOf(Fencing.Renewed.class, a.fencing.renew("vol-1", LUN, current)).key();
        advance(Duration.ofSeconds(40));
        assertTrue(b.refused().getMessage().contains("changed since the last attempt, so the holder is alive"));
        advance(Duration.ofSeconds(59));
        b.refused();
        assertTrue(a.registered());

        advance(Duration.ofSeconds(1));
        Fencing.Held took = b.acquire();

        assertEquals(Optional.of(current.toString()), took.tookOverFrom());
        assertEquals(Optional.of(took.key().value()), target.holderKey());
        assertFalse(a.registered(), "every nexus of A is off the LUN");
        assertFalse(target.writeAllowed("a1"));
        assertFalse(target.writeAllowed("a2"));
        assertEquals(List.of("a1", "a2"), target.aborted().stream().sorted().toList(), "PREEMPT AND ABORT");
    }

    @Test
    void aPreemptedNodeCannotRenewItselfBackAndDropsWhatIsLeft() throws Exception {
        FenceKey current = a.acquire().key();
        FenceKey bKey = takenOverByB();

        Fencing.Renewal renewal = a.fencing.renew("vol-1", LUN, current);

        Fencing.FencedOut fenced = assertInstanceOf(Fencing.FencedOut.class, renewal);
        assertEquals(Optional.of(bKey.value()), fenced.holder());
        assertFalse(a.registered());
        assertEquals(Optional.of(bKey.value()), target.holderKey(), "the new holder is untouched");
        assertFalse(target.writeAllowed("a1"));
    }

    // ---- a target that restarts without its reservations ----------------------------------------------

    /**
     * Everything gone and the PRgeneration back below what this node read after registering: a target restart,
     * not a preemption. The renewal registers every path and reserves again instead of reporting FENCED.
     */
    @Test
    void aTargetThatRestartedWithoutItsReservationsIsReservedAgainAtTheNextRenewal() throws Exception {
        FenceKey current = a.acquire().key();
        target.restartWithoutReservations();

        Fencing.Renewal renewal = a.fencing.renew("vol-1", LUN, current);

        FenceKey next = assertInstanceOf(Fencing.Renewed.class, renewal).key();
        assertEquals(Map.of("a1", next.value(), "a2", next.value()), target.registrations());
        assertEquals(Optional.of(next.value()), target.holderKey());
        assertEquals(5, target.holderType());
        assertFalse(target.writeAllowed("b1"), "fenced again: another node's writes fail");
        FenceKey after = assertInstanceOf(Fencing.Renewed.class, a.fencing.renew("vol-1", LUN, next)).key();
        assertEquals(Optional.of(after.value()), target.holderKey(), "and renewed as before");
    }

    /** The same empty LUN after another node took it and left: the generation moved on, so FENCED it stays. */
    @Test
    void aReservationGoneAfterAnotherNodeTookTheLunAndLeftIsStillFencedOut() throws Exception {
        FenceKey current = a.acquire().key();
        FenceKey bKey = takenOverByB();
        b.fencing.release("vol-1", LUN, bKey);
        assertEquals(Map.of(), target.registrations());

        Fencing.Renewal renewal = a.fencing.renew("vol-1", LUN, current);

        assertInstanceOf(Fencing.FencedOut.class, renewal);
        assertEquals(Map.of(), target.registrations(), "this node did not register itself back");
        assertEquals(Optional.empty(), target.holderKey());
    }

    @Test
    void anotherNodeThatReservesFirstAfterTheRestartFencesThisOneOut() throws Exception {
        FenceKey current = a.acquire().key();
        target.restartWithoutReservations();
        FenceKey bKey = b.acquire().key();

        Fencing.FencedOut fenced = assertInstanceOf(Fencing.FencedOut.class, a.fencing.renew("vol-1", LUN, current));

        assertEquals(Optional.of(bKey.value()), fenced.holder());
        assertFalse(a.registered());
    }

    /** Between this node's registrations and its RESERVE another node reserves: it takes its registrations back. */
    @Test
    void aNodeOvertakenWhileReservingAgainTakesItsRegistrationsBack() throws Exception {
        FenceKey current = a.acquire().key();
        target.restartWithoutReservations();
        target.beforeOut("a1", 0x01, seen -> {
            try {
                b.acquire();
            } catch (VolumeException e) {
                throw new AssertionError(e);
            }
        });

        Fencing.FencedOut fenced = assertInstanceOf(Fencing.FencedOut.class, a.fencing.renew("vol-1", LUN, current));

        assertTrue(fenced.why().contains("another node reserved the LUN first"), fenced.why());
        assertFalse(a.registered(), "registered without the reservation, this node could write under B's");
        assertEquals("b1", target.holder().orElseThrow());
    }

    /** A restarted plugin knows no generation: its first renewal that succeeds reads it, and then a restart is seen. */
    @Test
    void aRestartedPluginLearnsTheGenerationAtItsFirstRenewal() throws Exception {
        FenceKey current = a.acquire().key();
        a.restart();
        FenceKey renewed = assertInstanceOf(Fencing.Renewed.class, a.fencing.renew("vol-1", LUN, current)).key();
        target.restartWithoutReservations();

        FenceKey next = assertInstanceOf(Fencing.Renewed.class, a.fencing.renew("vol-1", LUN, renewed)).key();

        assertEquals(Optional.of(next.value()), target.holderKey());
    }

    /**
     * The residual: a target that restarted while the plugin was down too is found empty by a renewal that has no
     * generation to compare with; takeover-and-release cannot be told apart from it, so the volume is FENCED.
     */
    @Test
    void aTargetRestartBeforeARestartedPluginsFirstRenewalIsFencedOut() throws Exception {
        FenceKey current = a.acquire().key();
        a.restart();
        target.restartWithoutReservations();

        assertInstanceOf(Fencing.FencedOut.class, a.fencing.renew("vol-1", LUN, current));
    }

    @Test
    void aHolderThatRenewsWhileBeingTakenOverKeepsTheVolume() throws Exception {
        FenceKey current = a.acquire().key();
        b.refused();
        advance(TAKEOVER);
        // A's renewal lands between B's last look and B's PREEMPT AND ABORT: the victim key is gone.
        target.beforeOut("b1", 0x05, seen -> a.fencing.renew("vol-1", LUN, current));

        VolumeException refused = b.refused();

        assertTrue(refused.getMessage().contains("changed while this node was taking the volume over"),
                refused.getMessage());
        assertFalse(b.registered(), "B took its registration back");
        assertEquals(Map.of("a1", current.next().value(), "a2", current.next().value()), target.registrations());
        assertEquals("a1", target.holder().orElseThrow());
    }

    @Test
    void aTargetWithoutPreemptAndAbortIsPreemptedPlainly() throws Exception {
        target.withoutPreemptAndAbort();
        a.acquire();
        b.refused();
        advance(TAKEOVER);

        b.acquire();

        assertFalse(a.registered());
        assertEquals(List.of(), target.aborted());
    }

    @Test
    void aReleaseWhoseHolderPathIsDeadClearsTheReservationThroughAnother() throws Exception {
        a.acquire();
        assertEquals("a1", target.holder().orElseThrow());
        target.dead("a1", true);

        a.fencing.release("vol-1", LUN, a.key);

        assertEquals(Optional.empty(), target.holder());
        assertFalse(a.registered(), "the dead nexus's registration was preempted through a2");
        b.acquire();
    }

    @Test
    void aReleaseThatReachesNothingLeavesTheKeyForTheTakeoverRule() throws Exception {
        a.acquire();
        target.dead("a1", true);
        target.dead("a2", true);

        a.fencing.release("vol-1", LUN, a.key); // logs, never throws

        assertTrue(a.registered());
    }

    @Test
    void aRestageThroughANewNexusTakesBackOurOwnOldReservation() throws Exception {
        a.acquire(); // through a1 and a2
        target.dead("a1", true);
        target.dead("a2", true);
        // the node logs in again through a new session: a new nexus, same tag
        Path fresh = Path.of("/dev/sd-a3");
        target.path(fresh, "a3");
        a.paths.clear();
        a.paths.add(new LunPath(fresh, WWID));

        Fencing.Held held = a.acquire();

        assertEquals("a3", target.holder().orElseThrow());
        assertEquals(Map.of("a3", held.key().value()), target.registrations(), "the old nexuses' keys are gone");
        assertEquals(2, held.key().generation(), "past the generation left on the target");
    }

    /**
     * A path device whose name passed to a disk of another LUN between the listing and the open (a path lost,
     * another disk probed) gets no command: the stage registers and reserves through the others, and every
     * device opened for a command is closed again.
     */
    @Test
    void aPathWhoseNameNowLeadsToAnotherLunGetsNoCommand() throws Exception {
        target.leadsElsewhere(a.paths.get(0).device());

        Fencing.Held held = a.acquire();

        assertEquals(1, held.paths());
        assertEquals(Map.of("a2", held.key().value()), target.registrations());
        assertEquals("a2", target.holder().orElseThrow());
        assertTrue(target.log().stream().noneMatch(seen -> seen.nexus().equals("a1")), "nothing went down a1");
        assertEquals(0, target.openChannels());
    }

    @Test
    void aRenewalRegistersAPathThatCameBackWithoutItsRegistration() throws Exception {
        FenceKey first = a.acquire().key();
        new PersistentReservations(target, target.check(), Duration.ofSeconds(1)).registerIgnoringExisting(a.paths.get(1), 0);

        FenceKey next = assertInstanceOf(Fencing.Renewed.class, a.fencing.renew("vol-1", LUN, first)).key();

        assertEquals(Map.of("a1", next.value(), "a2", next.value()), target.registrations());
    }

    @Test
    void aLunWithoutPersistentReservationsOrType5IsUnsupportedAndUntouched() throws Exception {
        target.withoutType5();
        Fencing.Unsupported noType5 = assertInstanceOf(Fencing.Unsupported.class,
                a.fencing.acquire("vol-1", LUN, a.key));
        assertTrue(noType5.why().contains("type 5"), noType5.why());

        target.withoutPersistentReservations();
        assertInstanceOf(Fencing.Unsupported.class, a.fencing.acquire("vol-1", LUN, a.key));
        assertEquals(Map.of(), target.registrations());
    }

    @Test
    void aTgtLunIsNotFencedSinceAPathThatLogsInAgainLosesItsRegistration() throws Exception {
        target.product("IET", "VIRTUAL-DISK");

        Fencing.Unsupported tgt = assertInstanceOf(Fencing.Unsupported.class, a.fencing.acquire("vol-1", LUN, a.key));

        assertTrue(tgt.why().contains("Linux tgt") && tgt.why().contains("logs in again"), tgt.why());
        assertEquals(Map.of(), target.registrations(), "nothing registered");
        assertEquals(Optional.empty(), target.holder());
        assertEquals(List.of(), target.log().stream().filter(seen -> seen.opcode() == 0x5f).toList());
    }

    @Test
    void aLunThisNodeCannotFenceIsStillRefusedWhileAnotherNodeHoldsIt() throws Exception {
        Fencing.Held held = a.acquire(); // reserved while the target still answered as LIO (or by another tool)
        target.product("IET", "VIRTUAL-DISK");

        VolumeException refused = b.refused();

        assertTrue(refused.getMessage().contains("reservation key " + held.key()), refused.getMessage());
        assertTrue(refused.getMessage().contains("cannot take it over"), refused.getMessage());
        assertFalse(b.registered());
        target.withoutType5();
        assertTrue(b.refused().getMessage().contains("type 5"));
        assertEquals(Optional.of(held.key().value()), target.holderKey(), "the holder keeps the LUN");
    }

    @Test
    void nodeKeysAreStableDistinctAndNeverZero() {
        FenceKey key = FenceKey.forNode("node-a");
        assertEquals(key, FenceKey.forNode("node-a"));
        assertFalse(key.tag() == FenceKey.forNode("node-b").tag());
        assertEquals(12, key.tagHex().length());
        assertEquals(key.withGeneration(3), FenceKey.of(key.withGeneration(3).value()));
        assertTrue(key.isOurs(key.withGeneration(9).value()));
        assertEquals(0, key.withGeneration(0xffff).next().generation(), "the generation wraps");
        assertThrows(IllegalArgumentException.class, () -> new FenceKey(0, 1));
    }
}
