package dev.blocknode.testing;

import dev.blocknode.os.mount.Mounter;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** What a host-tier fixture undoes when it closes: its mounts, its loop devices, its directory. */
public final class HostCleanup {

    private HostCleanup() {
    }

    /** Unmounts everything under {@code dir}, deepest first so stacked and nested mounts come off; returns what was there. */
    public static List<Path> unmountAllUnder(Path dir, Mounter mounter) throws IOException {
        return unmountAllBeneath(dir, List.of(), mounter);
    }

    /**
     * {@link #unmountAllUnder}, but the fixture's own {@code kept} mounts stay (a kubelet root it made a shared
     * mount, and that mount's peer); a mount propagated to the peer comes off with its original.
     */
    public static List<Path> unmountAllBeneath(Path dir, List<Path> kept, Mounter mounter) throws IOException {
        List<Path> mounts = HostAssertions.mountsUnder(dir).stream().filter(m -> !kept.contains(m)).toList();
        for (Path mount : mounts.stream().sorted(Comparator.comparingInt(Path::getNameCount).reversed()).toList()) {
            mounter.unmount(mount);
        }
        return mounts;
    }

    /** Detaches every loop device (all are tried; the first failure is thrown after), then deletes {@code dir}. */
    public static void closeLoopsAndDelete(List<LoopDevice> loops, Path dir) throws IOException {
        IOException failure = null;
        for (LoopDevice loop : loops) {
            try {
                loop.close();
            } catch (IOException e) {
                failure = failure == null ? e : failure;
            }
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
