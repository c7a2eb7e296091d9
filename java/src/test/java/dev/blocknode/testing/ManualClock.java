package dev.blocknode.testing;

import dev.blocknode.os.wait.DeviceWaiter;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * Test time: a clock that moves only when the code under test pauses (or the test advances it), so waits
 * and retry loops run in microseconds and never sleep. Events can be scheduled at a moment of that time
 * ("the disk appears 2 s after the scan").
 */
public final class ManualClock implements InstantSource, DeviceWaiter.Pause {

    /** What happens when the clock reaches its moment. */
    @FunctionalInterface
    public interface Event {
        void happen() throws Exception;
    }

    private record Scheduled(Instant at, Event event) {
    }

    private Instant now = Instant.parse("2025-01-01T00:00:00Z");
    private final Instant start = now;
    private final List<Scheduled> scheduled = new ArrayList<>();
    private int pauses;

    @Override
    public synchronized Instant instant() {
        return now;
    }

    @Override
    public void pause(Duration atMost) {
        synchronized (this) {
            pauses++;
        }
        advance(atMost);
    }

    public void advance(Duration duration) {
        List<Event> due = new ArrayList<>();
        synchronized (this) {
            now = now.plus(duration);
            for (Iterator<Scheduled> it = scheduled.iterator(); it.hasNext(); ) {
                Scheduled s = it.next();
                if (!s.at().isAfter(now)) {
                    due.add(s.event());
                    it.remove();
                }
            }
        }
        for (Event event : due) {
            try {
                event.happen();
            } catch (Exception e) {
                throw new AssertionError("a scheduled event failed: " + e, e);
            }
        }
    }

    /** Runs {@code event} once the clock is {@code after} past the current time. */
    public synchronized void schedule(Duration after, Event event) {
        scheduled.add(new Scheduled(now.plus(after), event));
    }

    /** How much test time has passed since the clock was made. */
    public synchronized Duration elapsed() {
        return Duration.between(start, now);
    }

    public synchronized int pauses() {
        return pauses;
    }

    /** A waiter on this clock polling every 250 ms of test time. */
    public DeviceWaiter waiter() {
        return new DeviceWaiter(this, this, Duration.ofMillis(250));
    }
}
