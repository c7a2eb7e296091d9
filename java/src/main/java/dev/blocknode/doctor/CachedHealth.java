package dev.blocknode.doctor;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The health check's latest answer, from memory, so that Probe never waits on a disk. A thread of its own
 * runs the check again {@code interval} after each run ended. A check that hangs (a state directory on a
 * dead mount, a PATH entry on a stuck NFS) makes Probe fail once it has run for twice the interval, naming
 * how long, where Probe would otherwise hang with it until livenessprobe's timeout.
 */
public final class CachedHealth implements Supplier<List<String>>, AutoCloseable {

    private final Supplier<List<String>> check;
    private final long stuckAfterNanos;
    private final LongSupplier nanoClock;
    /** The thread that refreshes the answer; none in a test that refreshes by hand. */
    private ScheduledExecutorService refresher;
    private volatile List<String> latest;
    private volatile boolean running;
    /** When the running check began (System.nanoTime's scale: any value, negative too). */
    private volatile long runningSince;

    /** Runs the check once; later runs are {@link #refresh}'s (by hand, or {@link #start}'s thread). */
    CachedHealth(Supplier<List<String>> check, Duration interval, LongSupplier nanoClock) {
        this.check = check;
        this.stuckAfterNanos = interval.multipliedBy(2).toNanos();
        this.nanoClock = nanoClock;
        refresh();
    }

    /** The check, run now and then every {@code interval} after the last run ended, on a thread of its own. */
    public static CachedHealth start(Supplier<List<String>> check, Duration interval) {
        CachedHealth health = new CachedHealth(check, interval, System::nanoTime);
        health.refresher = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "health-check");
            thread.setDaemon(true);
            return thread;
        });
        health.refresher.scheduleWithFixedDelay(health::refresh, interval.toNanos(), interval.toNanos(),
                TimeUnit.NANOSECONDS);
        return health;
    }

    /** Runs the check once, here; what the refresher thread does every interval. */
    void refresh() {
        runningSince = nanoClock.getAsLong();
        running = true;
        try {
            latest = List.copyOf(check.get());
        } catch (RuntimeException e) {
            latest = List.of("the health check failed: " + e);
        } finally {
            running = false;
        }
    }

    @Override
    public List<String> get() {
        List<String> answer = latest;
        if (running) {
            long elapsed = nanoClock.getAsLong() - runningSince;
            if (elapsed > stuckAfterNanos) {
                List<String> stuck = new ArrayList<>(answer);
                stuck.add("the health check has not finished for " + TimeUnit.NANOSECONDS.toSeconds(elapsed)
                        + " s (the state directory or a directory on PATH does not answer)");
                return stuck;
            }
        }
        return answer;
    }

    @Override
    public void close() {
        if (refresher != null) {
            refresher.shutdownNow();
        }
    }
}
