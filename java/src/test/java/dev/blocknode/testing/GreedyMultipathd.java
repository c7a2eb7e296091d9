package dev.blocknode.testing;

import dev.blocknode.multipath.MultipathDaemon;

/**
 * A multipathd that runs and builds a map over every path by itself ({@code find_multipaths} "no" or "greedy", as
 * the VM tier's guest has it): it records each WWID itself, so none needs registering with {@code multipath -a}.
 */
public final class GreedyMultipathd implements MultipathDaemon {

    @Override
    public boolean isRunning() {
        return true;
    }

    @Override
    public boolean takesEveryPath() {
        return true;
    }
}
