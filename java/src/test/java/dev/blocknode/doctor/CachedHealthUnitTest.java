package dev.blocknode.doctor;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Probe's answer from memory: the latest check's, or "stuck" once a check hangs for two intervals. */
class CachedHealthUnitTest {

    private final AtomicLong now = new AtomicLong(-5_000_000_000L); // nanoTime may be negative
    private final AtomicReference<List<String>> problems = new AtomicReference<>(List.of());

    @Test
    void answersTheLatestCheckWithoutRunningIt() {
        CachedHealth health = new CachedHealth(problems::get, Duration.ofSeconds(3), now::get);
        assertEquals(List.of(), health.get());

        problems.set(List.of("host tools missing: mkfs.xfs"));
        assertEquals(List.of(), health.get(), "until the next refresh, the last answer");
        health.refresh();
        assertEquals(List.of("host tools missing: mkfs.xfs"), health.get());
    }

    @Test
    void aCheckThatFailsIsAProblem() {
        CachedHealth health = new CachedHealth(() -> {
            throw new IllegalStateException("no such directory");
        }, Duration.ofSeconds(3), now::get);
        assertTrue(health.get().get(0).contains("no such directory"), health.get().toString());
    }

    @Test
    void aCheckThatHangsForTwoIntervalsMakesProbeFailAndRecovers() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<Boolean> hang = new AtomicReference<>(false);
        CachedHealth health = new CachedHealth(() -> {
            if (hang.get()) {
                entered.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return List.of();
        }, Duration.ofSeconds(3), now::get);
        hang.set(true);
        CompletableFuture<Void> stuck = CompletableFuture.runAsync(health::refresh);
        assertTrue(entered.await(10, TimeUnit.SECONDS));

        now.addAndGet(Duration.ofSeconds(6).toNanos());
        assertEquals(List.of(), health.get(), "two intervals are allowed");
        now.addAndGet(Duration.ofSeconds(1).toNanos());
        List<String> answer = health.get();
        assertEquals(1, answer.size(), answer.toString());
        assertTrue(answer.get(0).contains("has not finished for 7 s"), answer.get(0));

        release.countDown();
        stuck.get(10, TimeUnit.SECONDS);
        assertEquals(List.of(), health.get());
    }
}
