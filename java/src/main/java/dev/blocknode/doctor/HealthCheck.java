package dev.blocknode.doctor;

import dev.blocknode.os.exec.ToolLocator;
import dev.blocknode.os.host.SyscallLibrary;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * What keeps the plugin from serving volumes right now, each item an operator can act on: CSI Probe's answer,
 * through {@link CachedHealth}.
 */
public final class HealthCheck implements Supplier<List<String>> {

    private final Path stateDir;
    private final List<String> requiredTools;

    /** {@code requiredTools}: what volumes run, which must be on PATH (blkid, each filesystem's tools). */
    public HealthCheck(Path stateDir, List<String> requiredTools) {
        this.stateDir = stateDir;
        this.requiredTools = List.copyOf(requiredTools);
    }

    @Override
    public List<String> get() {
        List<String> problems = new ArrayList<>();
        if (!SyscallLibrary.isLoaded()) {
            Throwable why = SyscallLibrary.loadFailure();
            problems.add("native library not loaded" + (why == null ? "" : ": " + why.getMessage()));
        }
        List<String> missing = ToolLocator.missing(requiredTools);
        if (!missing.isEmpty()) {
            problems.add("host tools missing: " + String.join(", ", missing)
                    + " (install e2fsprogs, xfsprogs and util-linux)");
        }
        if (!Files.isWritable(stateDir)) {
            problems.add("state directory " + stateDir + " is not writable");
        }
        return problems;
    }
}
