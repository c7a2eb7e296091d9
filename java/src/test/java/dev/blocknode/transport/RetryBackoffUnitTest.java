package dev.blocknode.transport;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The per-address back-off of the path repairs (iSCSI logins, NVMe/TCP connects), on a clock moved by hand. */
class RetryBackoffUnitTest {

    private final AtomicLong now = new AtomicLong();
    /** Without a repair loop (interval zero): the first wait is the given one. */
    private RetryBackoff<String> backoff = every(Duration.ZERO);

    private RetryBackoff<String> every(Duration repairInterval) {
        return new RetryBackoff<>(Duration.ofSeconds(10), Duration.ofSeconds(60), repairInterval, now::get);
    }

    @Test
    void waitsTheFirstWaitThenDoublesUpToTheMaximumAndForgetsOnSuccess() {
        assertEquals("refused (not tried again for 10 s)", backoff.failed("a", "refused"));
        assertEquals("refused (not tried again for 20 s)", backoff.failed("a", "refused"));
        backoff.failed("a", "refused");
        assertEquals("refused (not tried again for 60 s)", backoff.failed("a", "refused"));
        backoff.succeeded("a");
        assertEquals("refused (not tried again for 10 s)", backoff.failed("a", "refused"));
    }

    @Test
    void theFirstWaitIsNoLongerThanTheRepairInterval() {
        backoff = every(Duration.ofSeconds(5));

        assertEquals(Duration.ofSeconds(5), backoff.firstWait());
        assertEquals("refused (not tried again for 5 s)", backoff.failed("a", "refused"));
        advance(Duration.ofMillis(4999));
        assertTrue(backoff.pending("a").isPresent(), "another volume of the address, in the same pass");
        advance(Duration.ofMillis(1));
        assertEquals(Optional.empty(), backoff.pending("a"), "the next pass, one interval later");
        assertEquals("refused (not tried again for 10 s)", backoff.failed("a", "refused"), "then doubling");
    }

    @Test
    void aFailureAtOnceWaitsTheFirstWaitWhateverFailedBefore() {
        backoff.failed("a", "timed out");
        backoff.failed("a", "timed out");

        assertEquals("refused (not tried again for 10 s)", backoff.failedAtOnce("a", "refused"));
        assertEquals("timed out (not tried again for 20 s)", backoff.failed("a", "timed out"), "counted anew");
    }

    @Test
    void aLongerIntervalLeavesTheFirstWaitAsItIs() {
        backoff = every(Duration.ofSeconds(30));

        assertEquals(Duration.ofSeconds(10), backoff.firstWait());
    }

    @Test
    void aFractionOfASecondIsSaid() {
        backoff = every(Duration.ofMillis(2500));

        assertEquals("refused (not tried again for 2.5 s)", backoff.failed("a", "refused"));
        assertThrows(IllegalArgumentException.class, () -> every(Duration.ofSeconds(-1)));
    }

    private void advance(Duration by) {
        now.addAndGet(by.toNanos());
    }
}
