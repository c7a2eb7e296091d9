package dev.blocknode.multipath;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;

/**
 * A {@link MultipathDaemon} that keeps a "running" answer for a few seconds. A burst of N stages would
 * otherwise start N {@code multipathd show daemon} at once, each a process start and a turn of the daemon's
 * CLI while it is busiest (taking the burst's paths). Concurrent callers share one question: they wait for the
 * answer being asked rather than ask again.
 *
 * <p>Only "running" (which includes a late answer: a busy daemon) is kept. "Absent" is answered at once by
 * the refused socket, so asking again costs little, and a stale "absent" is the dangerous one: a single-path
 * LUN would be used without a map, and a daemon started meanwhile could claim its disk under a mounted
 * filesystem. A stale "running" for at most {@link #KEPT} only makes a stage wait for a map that does not
 * come and fail, to be retried.
 */
final class RememberedDaemon implements MultipathDaemon {

    static final Duration KEPT = Duration.ofSeconds(10);

    private final MultipathDaemon asked;
    private final InstantSource clock;
    private Instant runningUntil = Instant.MIN;

    RememberedDaemon(MultipathDaemon asked, InstantSource clock) {
        this.asked = asked;
        this.clock = clock;
    }

    @Override
    public synchronized boolean isRunning() {
        if (clock.instant().isBefore(runningUntil)) {
            return true;
        }
        boolean running = asked.isRunning();
        if (running) {
            runningUntil = clock.instant().plus(KEPT);
        }
        return running;
    }
}
