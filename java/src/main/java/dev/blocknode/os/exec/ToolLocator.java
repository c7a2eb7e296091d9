package dev.blocknode.os.exec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/** Finds host tools on the same fixed search path that {@link ProcessCommandRunner} runs them with. */
public final class ToolLocator {

    public static final String SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    private ToolLocator() {
    }

    public static Optional<Path> find(String tool) {
        for (String dir : SEARCH_PATH.split(":")) {
            Path candidate = Path.of(dir, tool);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    public static List<String> missing(List<String> tools) {
        return tools.stream().filter(t -> find(t).isEmpty()).toList();
    }
}
