package dev.blocknode.transport;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Per address (an iSCSI portal, an NVMe controller's portal), how long a repair leaves it alone after its last
 * attempt failed: {@code first}, doubling up to {@code max}, forgotten on success. Kept per address rather than per
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

    public RetryBackoff(Duration first, Duration max, LongSupplier nanoTime) {
        this.first = first;
        this.max = max;
        this.nanoTime = nanoTime;
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
        long wait = Math.min(max.toNanos(), first.toNanos() << Math.min(count - 1, 10));
        String said = why + " (not tried again for " + Duration.ofNanos(wait).toSeconds() + " s)";
        failures.put(key, new Failure(count, nanoTime.getAsLong() + wait, said));
        return said;
    }

    public void succeeded(K key) {
        failures.remove(key);
    }
}
