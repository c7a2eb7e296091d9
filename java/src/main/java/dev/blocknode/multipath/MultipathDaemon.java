package dev.blocknode.multipath;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;

import java.time.Duration;

/**
 * Tells whether multipathd runs on the node. When it does, even a single-path LUN is used through a map:
 * multipathd would otherwise claim the path later, under a mounted filesystem.
 */
@FunctionalInterface
public interface MultipathDaemon {

    boolean isRunning();

    /** Asks the daemon itself ("multipathd show daemon" answers only when it runs). */
    static MultipathDaemon askingWith(CommandRunner commands) {
        return () -> {
            try {
                return commands.run(Command.of("multipathd", "show", "daemon").withTimeout(Duration.ofSeconds(5)))
                        .succeeded();
            } catch (CommandException notInstalledOrHung) {
                return false;
            }
        };
    }

    static MultipathDaemon running(boolean running) {
        return () -> running;
    }
}
