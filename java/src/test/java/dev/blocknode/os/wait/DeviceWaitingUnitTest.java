package dev.blocknode.os.wait;

import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.os.wait.DeviceWaitMode;
import dev.blocknode.testing.ScriptedUevents;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

class DeviceWaitingUnitTest {

    @Test
    void pollModeNeverOpensTheEventSource() throws Exception {
        try (DeviceWaiting waiting = DeviceWaiting.start(DeviceWaitMode.POLL, Optional.of(Duration.ofMillis(5)),
                () -> fail("opened the uevent socket in poll mode"))) {
            assertFalse(waiting.eventDriven());
            int[] looks = {0};
            assertEquals("sdb", waiting.waiter().within(Duration.ofSeconds(30), "sdb",
                    () -> ++looks[0] == 3 ? Optional.of("sdb") : Optional.empty()));
        }
    }

    @Test
    void withoutTheSocketItPolls() throws Exception {
        try (DeviceWaiting waiting = DeviceWaiting.start(DeviceWaitMode.EVENTS, Optional.of(Duration.ofMillis(5)),
                () -> {
                    throw new NativeIOException("socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)", null, 13,
                            "EACCES", "Permission denied");
                })) {
            assertFalse(waiting.eventDriven());
            int[] looks = {0};
            assertEquals("sdb", waiting.waiter().within(Duration.ofSeconds(30), "sdb",
                    () -> ++looks[0] == 3 ? Optional.of("sdb") : Optional.empty()));
            assertEquals(3, looks[0]);
        }
    }

    @Test
    void aWaitEndedByAnEventRecordsTheTimeSinceTheEvent() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Metrics.addRegistry(registry);
        ScriptedUevents source = new ScriptedUevents();
        try (DeviceWaiting waiting = DeviceWaiting.start(DeviceWaitMode.EVENTS, Optional.of(Duration.ofSeconds(60)),
                () -> source)) {
            AtomicBoolean appeared = new AtomicBoolean();
            Thread waiter = Thread.currentThread();
            Thread kernel = Thread.ofVirtual().start(() -> {
                while (waiter.getState() != Thread.State.TIMED_WAITING) { // the waiter looked and now pauses
                    Thread.onSpinWait();
                }
                appeared.set(true);
                source.emit(ScriptedUevents.event("add", "block", "/devices/virtual/block/dm-1"));
            });
            long start = System.nanoTime();
            waiting.waiter().within(Duration.ofMinutes(5), "dm-1",
                    () -> appeared.get() ? Optional.of("dm-1") : Optional.empty());
            long waitedNanos = System.nanoTime() - start;
            kernel.join();
            Timer afterEvent = registry.find("blocknode_phase").tag("phase", DeviceWaiter.PHASE_AFTER_UEVENT).timer();
            assertNotNull(afterEvent, "no " + DeviceWaiter.PHASE_AFTER_UEVENT + " timing");
            assertEquals(1, afterEvent.count());
            assertTrue(afterEvent.totalTime(TimeUnit.NANOSECONDS) < waitedNanos);
            assertTrue(waitedNanos < TimeUnit.SECONDS.toNanos(10), waitedNanos / 1_000_000 + " ms");
        } finally {
            Metrics.removeRegistry(registry);
        }
    }

    @Test
    void eventsModeListensAndClosesTheSource() {
        ScriptedUevents source = new ScriptedUevents();
        DeviceWaiting waiting = DeviceWaiting.start(DeviceWaitMode.EVENTS, Optional.empty(), () -> source);
        assertTrue(waiting.eventDriven());
        waiting.close();
        assertFalse(waiting.eventDriven());
        assertTrue(source.closed());
    }
}
