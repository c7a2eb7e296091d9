package dev.blocknode.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** What every figure measures with: the run it belongs to, and the run's settings, volumes and report. */
abstract class Figure {

    final BenchRun run;
    final BenchOptions o;
    final Volumes volumes;
    final Report report;

    Figure(BenchRun run) {
        this.run = run;
        this.o = run.o;
        this.volumes = run.volumes;
        this.report = run.report;
    }

    /** What runs with a directory of its own and gives back output lines (a bench JVM, say). */
    @FunctionalInterface
    interface InDirectory {
        List<String> run(Path dir) throws IOException;
    }

    /**
     * {@code what} with a tmpfs of its own at {@code <work>/<name>} (mounted {@code size}, mode 700), unmounted after:
     * for a fabricated node, whose sysfs would be in memory too.
     */
    List<String> onOwnTmpfs(String name, String size, InDirectory what) throws IOException {
        Path tmpfs = Files.createDirectories(o.work().resolve(name));
        Volumes.runCommand(List.of("mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=700", "bench-" + name,
                tmpfs.toString()));
        try {
            return what.run(tmpfs);
        } finally {
            Volumes.runCommand(List.of("umount", tmpfs.toString()));
        }
    }
}
