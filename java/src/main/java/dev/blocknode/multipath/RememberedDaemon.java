package dev.blocknode.multipath;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * A {@link MultipathDaemon} that keeps its answers for a while. A burst of N stages would otherwise start N
 * {@code multipathd show daemon} at once, each a process start and a turn of the daemon's CLI while it is
 * busiest (taking the burst's paths). Concurrent callers share one question: they wait for the answer being
 * asked rather than ask again.
 *
 * <p>Only "running" (which includes a late answer: a busy daemon) is kept, for {@link #RUNNING_KEPT}. "Absent"
 * is answered at once by the refused socket, so asking again costs little, and a stale "absent" is the
 * dangerous one: a single-path LUN would be used without a map, and a daemon started meanwhile could claim its
 * disk under a mounted filesystem. A stale "running" only makes a stage wait for a map that does not come and
 * fail, to be retried.
 *
 * <p>The {@code find_multipaths} policy ({@link FindMultipaths}) is read from {@code multipathd show config} and
 * read again at most once per {@link #CONFIG_KEPT}; a read that fails keeps the last answer, and with none yet
 * the answer is "register the WWID", the behaviour without this knowledge. It changes only when an
 * administrator reconfigures the daemon, and a minute later the node follows. The transports' daemon reads it
 * once at start ({@link #readingConfigNow}), while the node is quiet.
 */
final class RememberedDaemon implements MultipathDaemon {

    private static final Logger LOG = Logger.getLogger(RememberedDaemon.class.getName());
    static final Duration RUNNING_KEPT = Duration.ofSeconds(10);
    static final Duration CONFIG_KEPT = Duration.ofSeconds(60);
    private static final Duration CONFIG_TIMEOUT = Duration.ofSeconds(5);

    private final CommandRunner commands;
    private final MultipathDaemon asked;
    private final InstantSource clock;
    private final Object livenessLock = new Object();
    private final Object configLock = new Object();
    private Instant runningUntil = Instant.MIN;
    private Instant configUntil = Instant.MIN;
    private boolean takesEveryPath;

    RememberedDaemon(CommandRunner commands, InstantSource clock) {
        this.commands = commands;
        this.asked = MultipathDaemon.askingWith(commands);
        this.clock = clock;
    }

    @Override
    public boolean isRunning() {
        synchronized (livenessLock) {
            if (clock.instant().isBefore(runningUntil)) {
                return true;
            }
            boolean running = asked.isRunning();
            if (running) {
                runningUntil = clock.instant().plus(RUNNING_KEPT);
            }
            return running;
        }
    }

    @Override
    public boolean takesEveryPath() {
        synchronized (configLock) {
            if (clock.instant().isBefore(configUntil)) {
                return takesEveryPath;
            }
            // A read that fails keeps the last answer read: in a burst the daemon is too busy to answer in time
            // (measured: 5 s were not enough at N = 12 under TCG), and its config has not changed for that.
            readTakesEveryPath().ifPresent(answer -> takesEveryPath = answer);
            configUntil = clock.instant().plus(CONFIG_KEPT);
            return takesEveryPath;
        }
    }

    /**
     * Reads the config once in the background if the daemon runs, so that the first burst of stages finds the
     * answer there instead of asking a daemon busy with the burst's paths.
     */
    RememberedDaemon readingConfigNow() {
        Thread.ofVirtual().name("blocknode-multipathd-config").start(() -> {
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
