package dev.blocknode.multipath;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.logging.Logger;

/**
 * A {@link MultipathDaemon} that keeps its answers for a while. A burst of N stages would otherwise start N
 * {@code multipathd show daemon} at once, each a process start and a turn of the daemon's CLI while it is
 * busiest (taking the burst's paths). Concurrent callers share one question: they wait for the answer being
 * asked rather than ask again.
 *
 * <p>Only "running" (which includes a late answer: a busy daemon) is kept, for {@link #RUNNING_KEPT}; then, for
 * up to {@link #RUNNING_STALE} after it was answered, it is still the answer while the daemon is asked again in
 * the background, so that no stage of a burst waits for that question (measured under TCG at N = 4: a late
 * {@code show daemon} took 4 s, and every stage of the burst waited for it behind the lock). "Absent" is
 * answered at once by the refused socket, so asking again costs little, and a stale "absent" is the dangerous
 * one: a single-path LUN would be used without a map, and a daemon started meanwhile could claim its disk under
 * a mounted filesystem. A stale "running" only makes a stage wait for a map that does not come and fail, to be
 * retried; past {@link #RUNNING_STALE} (a node quiet for a while) the caller asks and waits, as the first one does.
 *
 * <p>The {@code find_multipaths} policy ({@link FindMultipaths}) is read from {@code multipathd show config} in the
 * background, at start ({@link #readingConfigNow}, while the node is quiet) and again when the last read is older
 * than {@link #CONFIG_KEPT}; a caller never waits for it (measured: 3 s behind the lock in a burst of 4). Until a
 * read succeeds the answer is "register the WWID", the behaviour without this knowledge, and a read that fails
 * keeps the last answer. It changes only when an administrator reconfigures the daemon, and a minute or so later
 * the node follows.
 */
final class RememberedDaemon implements MultipathDaemon {

    private static final Logger LOG = Logger.getLogger(RememberedDaemon.class.getName());
    static final Duration RUNNING_KEPT = Duration.ofSeconds(10);
    static final Duration RUNNING_STALE = Duration.ofSeconds(60);
    static final Duration CONFIG_KEPT = Duration.ofSeconds(60);
    private static final Duration CONFIG_TIMEOUT = Duration.ofSeconds(5);

    private final CommandRunner commands;
    private final MultipathDaemon asked;
    private final InstantSource clock;
    private final Executor background;
    private final Object livenessLock = new Object();
    private final Object configLock = new Object();
    /** Guarded by livenessLock: when "running" was last answered (MIN: never, or "absent" since). */
    private Instant runningAnswered = Instant.MIN;
    private boolean livenessAsking;
    /** Guarded by configLock. */
    private Instant configUntil = Instant.MIN;
    private boolean takesEveryPath;

    RememberedDaemon(CommandRunner commands, Path unixSockets, InstantSource clock) {
        this(commands, unixSockets, clock,
                task -> Thread.ofVirtual().name("blocknode-multipathd-question").start(task));
    }

    /** {@code background} runs the questions no caller waits for (tests run them by hand). */
    RememberedDaemon(CommandRunner commands, Path unixSockets, InstantSource clock, Executor background) {
        this.commands = commands;
        this.asked = MultipathDaemon.askingWith(commands, unixSockets);
        this.clock = clock;
        this.background = background;
    }

    @Override
    public boolean isRunning() {
        synchronized (livenessLock) {
            Instant now = clock.instant();
            if (runningAnswered != Instant.MIN && now.isBefore(runningAnswered.plus(RUNNING_STALE))) {
                if (!now.isBefore(runningAnswered.plus(RUNNING_KEPT)) && !livenessAsking) {
                    livenessAsking = true;
                    background.execute(this::askInBackground);
                }
                return true;
            }
            return askNow();
        }
    }

    /** Asks, and records the answer; called with livenessLock held. */
    private boolean askNow() {
        boolean running = asked.isRunning();
        runningAnswered = running ? clock.instant() : Instant.MIN;
        return running;
    }

    private void askInBackground() {
        boolean running = asked.isRunning(); // outside the lock: the callers go on with the last answer
        synchronized (livenessLock) {
            runningAnswered = running ? clock.instant() : Instant.MIN;
            livenessAsking = false;
        }
    }

    @Override
    public boolean takesEveryPath() {
        synchronized (configLock) {
            if (!clock.instant().isBefore(configUntil)) {
                // Not asked again for a minute whatever the answer: a busy daemon is not asked once per volume.
                configUntil = clock.instant().plus(CONFIG_KEPT);
                background.execute(this::readConfig);
            }
            return takesEveryPath;
        }
    }

    private void readConfig() {
        // A read that fails keeps the last answer read: in a burst the daemon is too busy to answer in time
        // (measured: 5 s were not enough at N = 12 under TCG), and its config has not changed for that.
        Optional<Boolean> answer = readTakesEveryPath();
        synchronized (configLock) {
            answer.ifPresent(every -> takesEveryPath = every);
        }
    }

    /**
     * Reads the config once in the background if the daemon runs, so that the first burst of stages finds the
     * answer there instead of asking a daemon busy with the burst's paths.
     */
    RememberedDaemon readingConfigNow() {
        background.execute(() -> {
            if (isRunning()) {
                takesEveryPath();
            }
        });
        return this;
    }

    private Optional<Boolean> readTakesEveryPath() {
        Command command = Command.of("multipathd", "show", "config").withTimeout(CONFIG_TIMEOUT);
        try {
            CommandResult result = commands.run(command);
            if (!result.succeeded()) {
                LOG.info(() -> command.display() + " failed (keeping the last answer, else registering WWIDs with"
                        + " multipath -a): " + result.diagnostic());
                return Optional.empty();
            }
            boolean every = FindMultipaths.takesEveryPath(result.stdout());
            LOG.fine(() -> "multipathd's find_multipaths is " + FindMultipaths.valueIn(result.stdout()).orElse("unset")
                    + (every ? ": it takes every path, no WWID needs registering" : ": WWIDs are registered"));
            return Optional.of(every);
        } catch (CommandException e) {
            LOG.info(() -> command.display() + ": " + e.getMessage()
                    + " (keeping the last answer, else registering WWIDs with multipath -a)");
            return Optional.empty();
        }
    }
}
