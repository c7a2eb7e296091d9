package dev.blocknode.os.wait;

import dev.blocknode.metrics.Phases;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * Waits until a condition on the host holds or a deadline passes: a disk appearing after a scan, a map
 * after multipathd was asked for it, a device going away after a delete. Time comes from an injected clock
 * and the waiting between two looks from an injected {@link Pause}, so unit tests never sleep, and so the
 * kernel uevent listener ({@link DeviceWaiting}) can end a pause as soon as a device changed.
 */
public final class DeviceWaiter {

    private static final Logger LOG = Logger.getLogger(DeviceWaiter.class.getName());

    /** Blocks for at most the given time, or less when something may have changed (an event arrived). */
    @FunctionalInterface
    public interface Pause {
        void pause(Duration atMost) throws InterruptedException;

        /** {@link System#nanoTime()} when the last event that ends pauses arrived; empty for a plain pause. */
        default OptionalLong lastEventNanos() {
            return OptionalLong.empty();
        }
    }

    /**
     * Phase timing (see {@link Phases}): from the kernel event that preceded the end of a wait to the moment the
     * waiter had its result, for waits that paused at least once. The event-driven share of scan-to-ready.
     */
    public static final String PHASE_AFTER_UEVENT = "device_after_uevent";

    /** One look at the host: the awaited thing when it is there, else empty. */
    @FunctionalInterface
    public interface Probe<T> {
        Optional<T> look() throws IOException;
    }

    public static final Duration DEFAULT_INTERVAL = Duration.ofMillis(250);

    private final InstantSource clock;
    private final Pause pause;
    private final Duration interval;

    public DeviceWaiter(InstantSource clock, Pause pause, Duration interval) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("the polling interval must be positive: " + interval);
        }
        this.clock = clock;
        this.pause = pause;
        this.interval = interval;
    }

    /** Real time, looking every {@code interval}: plain polling. */
    public static DeviceWaiter polling(Duration interval) {
        return new DeviceWaiter(InstantSource.system(), Thread::sleep, interval);
    }

    public Instant now() {
        return clock.instant();
    }

    public Instant deadlineAfter(Duration timeout) {
        return now().plus(timeout);
    }

    /** {@link #until(String, Instant, Probe, Supplier)} with a deadline {@code timeout} from now. */
    public <T> T within(Duration timeout, String awaited, Probe<T> probe) throws IOException {
        return until(awaited, deadlineAfter(timeout), probe, () -> null);
    }

    public <T> T until(String awaited, Instant deadline, Probe<T> probe) throws IOException {
        return until(awaited, deadline, probe, () -> null);
    }

    /**
     * Looks, pauses, looks again... until the probe answers or the deadline passes. The probe always runs at
     * least once, and once more at the deadline, so a condition that holds at the end is never missed.
     *
     * @param lastSeen what to report on timeout about the state last observed (may return null)
     * @throws WaitTimeoutException naming {@code awaited} when the deadline passed
     * @throws InterruptedIOException when the thread was interrupted (its flag stays set)
     */
    public <T> T until(String awaited, Instant deadline, Probe<T> probe, Supplier<String> lastSeen)
            throws IOException {
        Instant start = now();
        long startNanos = System.nanoTime();
        int pauses = 0;
        while (true) {
            Optional<T> found = probe.look();
            if (found.isPresent()) {
                if (pauses > 0) {
                    reportWait(awaited, start, startNanos, pauses);
                }
                return found.get();
            }
            Instant now = now();
            if (!now.isBefore(deadline)) {
                throw new WaitTimeoutException(awaited, Duration.between(start, now), lastSeen.get());
            }
            pauseAtMost(Duration.between(now, deadline));
            pauses++;
        }
    }

    /** A wait that had to pause: how long, and how long after the last kernel event (scan-to-ready, in parts). */
    private void reportWait(String awaited, Instant start, long startNanos, int pauses) {
        long waitedMillis = Duration.between(start, now()).toMillis();
        long end = System.nanoTime(); // the event's time is the real clock's, not the injected one
        OptionalLong event = pause.lastEventNanos();
        String sinceEvent = "";
        if (event.isPresent() && event.getAsLong() - startNanos >= 0) {
            Phases.record(PHASE_AFTER_UEVENT, "ok", end - event.getAsLong());
            sinceEvent = ", " + (end - event.getAsLong()) / 1_000 + " us after the last storage uevent";
        }
        String detail = sinceEvent;
        LOG.info(() -> "waited " + waitedMillis + " ms for " + awaited + " (" + pauses
                + (pauses == 1 ? " pause" : " pauses") + detail + ")");
    }

    /** One pause of at most the polling interval and at most until the deadline: for callers' retry loops. */
    public void pauseBefore(Instant deadline) throws InterruptedIOException {
        Duration left = Duration.between(now(), deadline);
        if (!left.isNegative() && !left.isZero()) {
            pauseAtMost(left);
        }
    }

    private void pauseAtMost(Duration left) throws InterruptedIOException {
        try {
            pause.pause(left.compareTo(interval) < 0 ? left : interval);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for a device");
        }
    }
}
