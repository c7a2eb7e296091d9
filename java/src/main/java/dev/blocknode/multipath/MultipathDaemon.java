package dev.blocknode.multipath;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.CommandTimeoutException;

import java.time.Duration;
import java.time.InstantSource;

/**
 * Tells whether multipathd runs on the node. When it does, even a single-path LUN is used through a map:
 * multipathd would otherwise claim the path later, under a mounted filesystem.
 */
@FunctionalInterface
public interface MultipathDaemon {

    boolean isRunning();

    /**
     * True when the running daemon builds a map over every path that is not blacklisted by itself
     * ({@code find_multipaths} "no" or "greedy", see {@link FindMultipaths}), so that registering a WWID first
     * ({@code multipath -a}) adds nothing. False when it does not, or when that is not known.
     */
    default boolean takesEveryPath() {
        return false;
    }

    /**
     * The node's daemon as the transports ask it: {@link #askingWith} behind {@link RememberedDaemon}, so that a
     * burst of stages asks once every few seconds, not once per volume.
     */
    static MultipathDaemon of(CommandRunner commands) {
        return new RememberedDaemon(commands, InstantSource.system()).readingConfigNow();
    }

    /**
     * Asks the daemon itself, every time ("multipathd show daemon" answers only when it runs). An answer that is late is a
     * daemon that runs but is busy (an absent one is refused at once: its socket is gone), as when a burst of
     * stages has it taking hundreds of paths: taking it for absent would have each stage build its map with
     * {@code multipath WWID} beside the daemon, the heaviest command there is, and so feed the load.
     */
    static MultipathDaemon askingWith(CommandRunner commands) {
        return () -> {
            try {
                return commands.run(Command.of("multipathd", "show", "daemon").withTimeout(Duration.ofSeconds(5)))
                        .succeeded();
            } catch (CommandTimeoutException busy) {
                return true;
            } catch (CommandException notInstalled) {
                return false;
            }
        };
    }

    static MultipathDaemon running(boolean running) {
        return () -> running;
    }
}
