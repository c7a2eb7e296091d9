package dev.blocknode.volume;


import dev.blocknode.outcome.VolumeException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class OperationGuardUnitTest {

    private final OperationGuard guard = new OperationGuard();

    @Test
    void secondEnterOnTheSameVolumeIsAbortedNamingTheRunningOperation() throws VolumeException {
        try (OperationGuard.Permit ignored = guard.enter("vol-1", "NodeStageVolume")) {
            VolumeException e = assertThrows(VolumeException.class, () -> guard.enter("vol-1", "NodeUnstageVolume"));
            assertEquals(VolumeException.Outcome.ABORTED, e.outcome());
            assertTrue(e.getMessage().contains("vol-1"), e.getMessage());
            assertTrue(e.getMessage().contains("NodeStageVolume"), e.getMessage());
            assertTrue(e.getMessage().contains("already in progress"), e.getMessage());
            assertTrue(e.getMessage().contains("running for 0 s"), e.getMessage());
        }
    }

    @Test
    void theSameOperationTwiceIsAlsoAborted() throws VolumeException {
        try (OperationGuard.Permit ignored = guard.enter("v", "NodePublishVolume")) {
            assertEquals(VolumeException.Outcome.ABORTED,
                    assertThrows(VolumeException.class, () -> guard.enter("v", "NodePublishVolume")).outcome());
        }
    }

    @Test
    void refusedEnterDoesNotDisturbTheHolder() throws VolumeException {
        OperationGuard.Permit first = guard.enter("v", "stage");
        assertThrows(VolumeException.class, () -> guard.enter("v", "publish"));
        assertEquals(1, guard.inFlight());
        first.close();
        assertEquals(0, guard.inFlight());
    }

    @Test
    void differentVolumesBothEnter() throws VolumeException {
        try (OperationGuard.Permit a = guard.enter("vol-a", "stage");
             OperationGuard.Permit b = guard.enter("vol-b", "stage")) {
            assertEquals(2, guard.inFlight());
        }
        assertEquals(0, guard.inFlight());
    }

    @Test
    void volumeIdsAreComparedExactly() throws VolumeException {
        try (OperationGuard.Permit a = guard.enter("vol", "stage");
             OperationGuard.Permit b = guard.enter("VOL", "stage");
             OperationGuard.Permit c = guard.enter("vol ", "stage")) {
            assertEquals(3, guard.inFlight());
        }
    }

    @Test
    void afterCloseTheVolumeCanBeEnteredAgain() throws VolumeException {
        guard.enter("v", "stage").close();
        assertEquals(0, guard.inFlight());
        try (OperationGuard.Permit again = guard.enter("v", "unstage")) {
            assertEquals(1, guard.inFlight());
        }
        assertDoesNotThrow(() -> guard.enter("v", "publish").close());
    }

    @Test
    void closingTwiceIsHarmless() throws VolumeException {
        OperationGuard.Permit permit = guard.enter("v", "stage");
        permit.close();
        permit.close();
        assertEquals(0, guard.inFlight());
    }

    @Test
    void closingAStalePermitDoesNotReleaseSomeoneElses() throws VolumeException {
        OperationGuard.Permit stale = guard.enter("v", "stage");
        stale.close();
        OperationGuard.Permit current = guard.enter("v", "unstage");
        stale.close();
        assertEquals(1, guard.inFlight());
        VolumeException e = assertThrows(VolumeException.class, () -> guard.enter("v", "publish"));
        assertTrue(e.getMessage().contains("unstage"), e.getMessage());
        current.close();
        assertEquals(0, guard.inFlight());
    }

    @Test
    void closingAStalePermitWithTheSameOperationNameDoesNotReleaseTheNewOne() throws VolumeException {
        for (int i = 0; i < 10_000; i++) {
            OperationGuard.Permit stale = guard.enter("v", "stage");
            stale.close();
            OperationGuard.Permit current = guard.enter("v", "stage");
            stale.close();
            assertEquals(1, guard.inFlight(), "iteration " + i);
            current.close();
        }
    }

    @Test
    void permitOfOneVolumeDoesNotReleaseAnother() throws VolumeException {
        OperationGuard.Permit a = guard.enter("a", "stage");
        OperationGuard.Permit b = guard.enter("b", "stage");
        a.close();
        assertThrows(VolumeException.class, () -> guard.enter("b", "x"));
        b.close();
        assertEquals(0, guard.inFlight());
    }

    @Test
    void guardsAreIndependent() throws VolumeException {
        OperationGuard other = new OperationGuard();
        try (OperationGuard.Permit a = guard.enter("v", "stage");
             OperationGuard.Permit b = other.enter("v", "stage")) {
            assertEquals(1, guard.inFlight());
            assertEquals(1, other.inFlight());
        }
    }

    @Test
    void exactlyOneThreadWinsPerVolume() throws Exception {
        int volumes = 8;
        int threadsPerVolume = 16;
        CountDownLatch ready = new CountDownLatch(volumes * threadsPerVolume);
        CountDownLatch start = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(volumes);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch lost = new CountDownLatch(volumes * (threadsPerVolume - 1));
        Map<String, AtomicInteger> winners = new ConcurrentHashMap<>();
        AtomicInteger aborted = new AtomicInteger();
        AtomicInteger otherErrors = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(volumes * threadsPerVolume);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int v = 0; v < volumes; v++) {
                String volume = "vol-" + v;
                winners.put(volume, new AtomicInteger());
                for (int t = 0; t < threadsPerVolume; t++) {
                    String operation = "op-" + t;
                    futures.add(pool.submit(() -> {
                        ready.countDown();
                        start.await();
                        try (OperationGuard.Permit permit = guard.enter(volume, operation)) {
                            winners.get(volume).incrementAndGet();
                            entered.countDown();
                            // Hold the volume until every thread has tried, so no loser can win later.
                            release.await();
                        } catch (VolumeException e) {
                            if (e.outcome() == VolumeException.Outcome.ABORTED) {
                                aborted.incrementAndGet();
                            } else {
                                otherErrors.incrementAndGet();
                            }
                            lost.countDown();
                        }
                        return null;
                    }));
                }
            }
            assertTrue(ready.await(30, TimeUnit.SECONDS));
            start.countDown();
            assertTrue(entered.await(30, TimeUnit.SECONDS), "not every volume got a winner");
            // Losers finish on their own; winners hold on until released.
            assertTrue(lost.await(30, TimeUnit.SECONDS), "some losers neither won nor were refused");
            assertEquals(volumes, guard.inFlight());
            release.countDown();
            for (Future<?> f : futures) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            release.countDown();
            pool.shutdownNow();
        }
        for (Map.Entry<String, AtomicInteger> w : winners.entrySet()) {
            assertEquals(1, w.getValue().get(), w.getKey());
        }
        assertEquals(volumes * (threadsPerVolume - 1), aborted.get());
        assertEquals(0, otherErrors.get());
        assertEquals(0, guard.inFlight());
    }
}
