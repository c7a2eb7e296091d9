package dev.blocknode.transport;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Per address (an iSCSI portal, an NVMe controller's portal), how long a repair leaves it alone after its last
 * attempt failed: {@code first}, doubling up to {@code max}, forgotten on success. The first wait is never longer
 * than the repair loop's interval (given at construction): the loop's next pass then tries again, so a path that
 * returns right after one refused attempt is back within two intervals, and the wait still keeps the other volumes
 * of the address from trying it again in the same pass. Kept per address rather than per
 * volume because one login or connect serves every volume behind the address: without it, an address that refuses
 * would cost one timeout per volume of it on every pass of the repair loop.
 *
 * @param <K> what names an address
 */
public final class RetryBackoff<K> {

    private record Failure(int failures, long notBefore, String why) {
    }

    private final Duration first;
    private final Duration max;
    private final LongSupplier nanoTime;
    private final Map<K, Failure> failures = new ConcurrentHashMap<>();

    /**
     * {@code repairInterval} is the repair loop's, {@link Duration#ZERO} when there is no loop: the first wait after a
     * failure is at most that interval, and each later one doubles from it, so that a pass after a wait of one
     * interval always finds it over (passes are an interval apart, end to start).
     */
    public RetryBackoff(Duration first, Duration max, Duration repairInterval, LongSupplier nanoTime) {
        if (repairInterval.isNegative()) {
            throw new IllegalArgumentException("a repair interval of zero (no loop) or above, got " + repairInterval);
        }
        this.first = repairInterval.isZero() || first.compareTo(repairInterval) <= 0 ? first : repairInterval;
        this.max = max;
        this.nanoTime = nanoTime;
    }

    /** The wait after the first failure: {@code first}, or the repair interval when that is shorter. */
    public Duration firstWait() {
        return first;
    }

    /** Why {@code key} is not to be tried now (its last failure, with the wait), empty when it may be. */
    public Optional<String> pending(K key) {
        Failure last = failures.get(key);
        return last != null && nanoTime.getAsLong() - last.notBefore() < 0 ? Optional.of(last.why()) : Optional.empty();
    }

    /** The last failure of {@code key} and its wait, whether or not it is over; empty after a success. */
    public Optional<String> lastFailure(K key) {
        return Optional.ofNullable(failures.get(key)).map(Failure::why);
    }

    /** An attempt at {@code key} failed for {@code why}: returns the reason with the wait it starts. */
    public String failed(K key, String why) {
        int count = Optional.ofNullable(failures.get(key)).map(Failure::failures).orElse(0) + 1;
        long wait = Math.min(max.toNanos(), firstWait().toNanos() << Math.min(count - 1, 10));
        String said = why + " (not tried again for " + seconds(wait) + ")";
        failures.put(key, new Failure(count, nanoTime.getAsLong() + wait, said));
        return said;
    }

    /**
     * An attempt at {@code key} that failed at once (a refused connection: nothing listens there yet) cost next to
     * nothing, so its wait does not grow: one first wait, whatever failed before. The back-off is there to bound
     * what failing costs a pass; doubling the wait after cheap refusals would only keep a returned path lost for
     * longer (an outage of several passes left a 20 s wait running when the portal came back). Returns the reason
     * with the wait.
     */
    public String failedAtOnce(K key, String why) {
        long wait = firstWait().toNanos();
        String said = why + " (not tried again for " + seconds(wait) + ")";
        failures.put(key, new Failure(1, nanoTime.getAsLong() + wait, said));
        return said;
    }

    public void succeeded(K key) {
        failures.remove(key);
    }

    /** "5 s", "2.5 s": an interval under ten seconds may have a fraction worth saying. */
    private static String seconds(long nanos) {
        long millis = Duration.ofNanos(nanos).toMillis();
        return (millis % 1000 == 0 ? Long.toString(millis / 1000) : Double.toString(millis / 1000.0)) + " s";
    }
}
