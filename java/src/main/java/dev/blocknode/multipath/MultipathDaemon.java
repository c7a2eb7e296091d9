package dev.blocknode.multipath;

import dev.blocknode.os.AbstractSockets;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.CommandTimeoutException;

import java.io.IOException;
import java.nio.file.Path;
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
     * burst of stages asks once every few seconds, not once per volume. {@code unixSockets} is the host's
     * /proc/net/unix (HostPaths#unixSockets).
     */
    static MultipathDaemon of(CommandRunner commands, Path unixSockets) {
        return new RememberedDaemon(commands, unixSockets, InstantSource.system()).readingConfigNow();
    }

    /**
     * Asks the daemon itself, every time ("multipathd show daemon" answers only when it runs). An answer that is
     * late is a daemon that runs but is busy, as when a burst of stages has it taking hundreds of paths: taking it
     * for absent would have each stage build its map with {@code multipath WWID} beside the daemon, the heaviest
     * command there is, and so feed the load. Unless its socket is not listed in {@code unixSockets}: then the
     * question was late only because the node is so loaded that the client itself started late (a fencing boot at
     * load 13 took an absent daemon for a busy one, and its stage waited for a map no daemon would make).
     */
    static MultipathDaemon askingWith(CommandRunner commands, Path unixSockets) {
        return () -> {
            try {
                return commands.run(Command.of("multipathd", "show", "daemon").withTimeout(Duration.ofSeconds(5)))
                        .succeeded();
            } catch (CommandTimeoutException late) {
                return listening(unixSockets);
            } catch (CommandException notInstalled) {
                return false;
            }
        };
    }

    /** Whether multipathd's socket is bound; true when that cannot be read, as a late answer was taken before. */
    private static boolean listening(Path unixSockets) {
        try {
            return AbstractSockets.read(unixSockets).has(AbstractSockets.MULTIPATHD);
        } catch (IOException unreadable) {
            return true;
        }
    }

    static MultipathDaemon running(boolean running) {
        return () -> running;
    }
}
