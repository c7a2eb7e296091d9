package dev.blocknode.os.wait;

import dev.blocknode.testing.ManualClock;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DeviceWaiterUnitTest {

    private final ManualClock clock = new ManualClock();
    private final DeviceWaiter waiter = clock.waiter();

    @Test
    void returnsAtOnceWhenTheConditionHolds() throws IOException {
        assertEquals("sdb", waiter.within(Duration.ofSeconds(10), "sdb", () -> Optional.of("sdb")));
        assertEquals(0, clock.pauses());
        assertEquals(Duration.ZERO, clock.elapsed());
    }

    @Test
    void looksAgainAfterEachPauseUntilTheConditionHolds() throws IOException {
        AtomicInteger looks = new AtomicInteger();
        String found = waiter.within(Duration.ofSeconds(10), "a disk", () ->
                looks.incrementAndGet() == 4 ? Optional.of("sdc") : Optional.empty());
        assertEquals("sdc", found);
        assertEquals(4, looks.get());
        assertEquals(3, clock.pauses());
        assertEquals(Duration.ofMillis(750), clock.elapsed());
    }

    @Test
    void aScheduledEventEndsTheWait() throws IOException {
        boolean[] appeared = {false};
        clock.schedule(Duration.ofSeconds(2), () -> appeared[0] = true);
        waiter.within(Duration.ofSeconds(10), "the event", () -> appeared[0] ? Optional.of(true) : Optional.empty());
        assertEquals(Duration.ofSeconds(2), clock.elapsed());
    }

    @Test
    void timesOutNamingWhatItWaitedForAndWhatItSaw() {
        AtomicInteger looks = new AtomicInteger();
        WaitTimeoutException e = assertThrows(WaitTimeoutException.class, () -> waiter.until("disk at 1:0:0:3",
                waiter.deadlineAfter(Duration.ofSeconds(2)), () -> {
                    looks.incrementAndGet();
                    return Optional.empty();
                }, () -> "nothing at 1:0:0:3"));
        assertEquals("timed out after 2 s waiting for disk at 1:0:0:3 (last seen: nothing at 1:0:0:3)", e.getMessage());
        assertEquals("disk at 1:0:0:3", e.awaited());
        assertEquals(Duration.ofSeconds(2), clock.elapsed());
        assertEquals(9, looks.get(), "a look at the start, one after each of 8 pauses (the last at the deadline)");
    }

    @Test
    void neverPausesPastTheDeadline() {
        List<Duration> pauses = new ArrayList<>();
        DeviceWaiter coarse = new DeviceWaiter(clock, d -> {
            pauses.add(d);
            clock.advance(d);
        }, Duration.ofSeconds(1));
        assertThrows(WaitTimeoutException.class,
                () -> coarse.within(Duration.ofMillis(2500), "x", Optional::empty));
        assertEquals(List.of(Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofMillis(500)), pauses);
    }

    @Test
    void aDeadlineInThePastStillLooksOnce() throws IOException {
        Instant past = clock.instant().minusSeconds(1);
        assertEquals(1, waiter.until("x", past, () -> Optional.of(1)));
        assertThrows(WaitTimeoutException.class, () -> waiter.until("x", past, Optional::empty));
        assertEquals(0, clock.pauses());
    }

    @Test
    void anInterruptedPauseIsAnInterruptedIOExceptionWithTheFlagKept() {
        DeviceWaiter interrupted = new DeviceWaiter(clock, d -> {
            throw new InterruptedException();
        }, Duration.ofMillis(100));
        try {
            assertThrows(InterruptedIOException.class,
                    () -> interrupted.within(Duration.ofSeconds(1), "x", Optional::empty));
            assertTrue(Thread.currentThread().isInterrupted());
        } finally {
            Thread.interrupted();
        }
    }

    @Test
    void probeErrorsPropagate() {
        IOException boom = new IOException("boom");
        assertEquals(boom, assertThrows(IOException.class, () -> waiter.within(Duration.ofSeconds(1), "x", () -> {
            throw boom;
        })));
    }

    @Test
    void refusesANonPositiveInterval() {
        assertThrows(IllegalArgumentException.class, () -> new DeviceWaiter(clock, clock, Duration.ZERO));
    }
}
