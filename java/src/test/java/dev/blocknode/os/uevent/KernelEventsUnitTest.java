package dev.blocknode.os.uevent;

import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.testing.ScriptedUevents;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import static dev.blocknode.testing.ScriptedUevents.event;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The listener against a scripted event stream. Pauses here are long (a minute) where an event must end them,
 * so a pause that is not ended shows as a test that takes a minute and fails its time check.
 */
class KernelEventsUnitTest {

    private static final Duration LONG = Duration.ofSeconds(60);
    private static final long QUICK_MILLIS = 10_000;

    private final ScriptedUevents source = new ScriptedUevents();
    private final KernelEvents events = KernelEvents.startForStorage(source);

    @AfterEach
    void close() {
        events.close();
    }

    @Test
    void aStorageEventEndsAPauseAtOnce() throws Exception {
        events.pause(Duration.ZERO); // this thread is up to date: its next pause waits
        long millis = pauseWhile(LONG, () -> source.emit(event("add", "block", "/devices/virtual/block/sdb")));
        assertTrue(millis < QUICK_MILLIS, "a 60 s pause took " + millis + " ms despite the event");
        assertEquals(1, events.wakeups());
    }

    @Test
    void eachStorageSubsystemWakes() throws Exception {
        int n = 0;
        for (String subsystem : KernelEvents.STORAGE_SUBSYSTEMS) {
            events.pause(Duration.ZERO);
            long millis = pauseWhile(LONG, () -> source.emit(event("change", subsystem, "/devices/x")));
            assertTrue(millis < QUICK_MILLIS, subsystem + ": " + millis + " ms");
            assertEquals(++n, events.wakeups(), subsystem);
        }
    }

    @Test
    void anEventOfAnotherSubsystemDoesNotEndAPause() throws Exception {
        events.pause(Duration.ZERO);
        long millis = pauseWhile(Duration.ofMillis(300), () -> source.emit(event("add", "net", "/devices/virtual/net/veth0")));
        assertTrue(millis >= 300, "the pause ended after " + millis + " ms");
        // On a loaded machine the reader may get to the event only after the pause ran out: wait for it to be read,
        // then check that reading it woke nobody (a wakeup counted late would still show here).
        awaitTrue(source::drained);
        assertEquals(0, events.wakeups());
    }

    @Test
    void anEventThatCameWhileTheThreadLookedEndsItsNextPauseAtOnce() throws Exception {
        events.pause(Duration.ZERO);
        source.emit(event("add", "block", "/devices/virtual/block/dm-0")); // meanwhile, the thread looks at sysfs
        awaitTrue(() -> events.wakeups() == 1);
        long start = System.nanoTime();
        events.pause(LONG);
        assertTrue(elapsedMillis(start) < QUICK_MILLIS);
        start = System.nanoTime();
        events.pause(Duration.ofMillis(200)); // that event is used up: this one waits its time
        assertTrue(elapsedMillis(start) >= 200);
    }

    @Test
    void lostEventsWakeEveryWaiter() throws Exception {
        events.pause(Duration.ZERO);
        long millis = pauseWhile(LONG, () -> source.fail(new EventsLostException("ENOBUFS", null)));
        assertTrue(millis < QUICK_MILLIS, millis + " ms");
        assertTrue(events.listening(), "lost events are no reason to stop listening");
    }

    @Test
    void aSourceThatKeepsFailingIsGivenUpAndPausesBecomeTimedPolls() throws Exception {
        for (int i = 0; i < KernelEvents.FAILURES_BEFORE_GIVING_UP; i++) {
            source.fail(new IOException("recvmsg: EBADF"));
        }
        awaitTrue(() -> !events.listening());
        awaitTrue(source::closed); // the reader closes the source just after it stops listening
        events.pause(Duration.ZERO);
        long start = System.nanoTime();
        events.pause(Duration.ofMillis(200));
        assertTrue(elapsedMillis(start) >= 200);
    }

    @Test
    void aFewFailuresInARowAreSurvived() throws Exception {
        for (int i = 0; i < KernelEvents.FAILURES_BEFORE_GIVING_UP - 1; i++) {
            source.fail(new IOException("transient"));
        }
        source.emit(event("add", "scsi", "/devices/platform/host2/session1/target2:0:0/2:0:0:1"));
        awaitTrue(() -> events.wakeups() == 1);
        assertTrue(events.listening());
    }

    @Test
    void closeStopsTheReaderAndClosesTheSource() {
        events.close();
        assertFalse(events.listening());
        assertTrue(source.closed());
    }

    @Test
    void aDeviceWaiterWokenByEventsFindsTheDeviceLongBeforeItsInterval() throws Exception {
        DeviceWaiter waiter = new DeviceWaiter(InstantSource.system(), events::pause, LONG);
        AtomicBoolean appeared = new AtomicBoolean();
        Thread kernel = Thread.ofVirtual().start(() -> {
            awaitTrue(() -> source.drained());
            appeared.set(true); // the disk is in sysfs, then the kernel announces it
            source.emit(event("add", "block", "/devices/platform/host2/session1/target2:0:0/2:0:0:1/block/sdc"));
        });
        long start = System.nanoTime();
        String found = waiter.within(Duration.ofMinutes(5), "sdc",
                () -> appeared.get() ? Optional.of("sdc") : Optional.empty());
        assertEquals("sdc", found);
        assertTrue(elapsedMillis(start) < QUICK_MILLIS, elapsedMillis(start) + " ms");
        kernel.join();
    }

    /** Pauses this thread for at most atMost, running duringPause on another thread once the pause waits. */
    private long pauseWhile(Duration atMost, Runnable duringPause) throws InterruptedException {
        Thread pausing = Thread.currentThread();
        Thread other = Thread.ofVirtual().start(() -> {
            awaitTrue(() -> pausing.getState() == Thread.State.TIMED_WAITING);
            duringPause.run();
        });
        long start = System.nanoTime();
        events.pause(atMost);
        long millis = elapsedMillis(start);
        other.join();
        return millis;
    }

    private static long elapsedMillis(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }

    /** Spins (yielding) until the condition holds; fails after 10 s. */
    private static void awaitTrue(BooleanSupplier condition) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("condition not met within 10 s");
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }
}
