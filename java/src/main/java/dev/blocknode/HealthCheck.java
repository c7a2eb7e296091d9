package dev.blocknode;

import dev.blocknode.os.exec.ToolLocator;
import dev.blocknode.os.host.SyscallLibrary;
import dev.blocknode.volume.filesystem.FilesystemType;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/** What keeps the plugin from serving volumes right now, each item an operator can act on. */
final class HealthCheck implements Supplier<List<String>> {

    static final List<String> REQUIRED_TOOLS;

    static {
        List<String> tools = new ArrayList<>(List.of("blkid"));
        for (FilesystemType type : FilesystemType.values()) {
            tools.addAll(type.tools());
        }
        REQUIRED_TOOLS = List.copyOf(tools);
    }

    private final Path stateDir;

    HealthCheck(Path stateDir) {
        this.stateDir = stateDir;
    }

    @Override
    public List<String> get() {
        List<String> problems = new ArrayList<>();
        if (!SyscallLibrary.isLoaded()) {
            Throwable why = SyscallLibrary.loadFailure();
            problems.add("native library not loaded" + (why == null ? "" : ": " + why.getMessage()));
        }
        List<String> missing = ToolLocator.missing(REQUIRED_TOOLS);
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
