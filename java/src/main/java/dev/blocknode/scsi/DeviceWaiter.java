package dev.blocknode.scsi;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Waits until a condition on the host holds or a deadline passes: a disk appearing after a scan, a map
 * after multipathd was asked for it, a device going away after a delete. Time comes from an injected clock
 * and the waiting between two looks from an injected {@link Pause}, so unit tests never sleep, and so the
 * kernel uevent listener ({@link DeviceWaiting}) can end a pause as soon as a device changed.
 */
public final class DeviceWaiter {

    /** Blocks for at most the given time, or less when something may have changed (an event arrived). */
    @FunctionalInterface
    public interface Pause {
        void pause(Duration atMost) throws InterruptedException;
    }

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
        while (true) {
            Optional<T> found = probe.look();
            if (found.isPresent()) {
                return found.get();
            }
            Instant now = now();
            if (!now.isBefore(deadline)) {
                throw new WaitTimeoutException(awaited, Duration.between(start, now), lastSeen.get());
            }
            pauseAtMost(Duration.between(now, deadline));
        }
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
