package dev.blocknode.testing;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.mount.Mounter;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * A Mounter for transports, which may look but never mount: stat answers from {@link #stats} (an unknown
 * path fails the test), the mount table is {@link #entries} (reads are counted), and mount, bind, unmount
 * and the mount-point check fail the test.
 */
public final class QueryOnlyMounter implements Mounter {

    public final Map<Path, FileStat> stats = new HashMap<>();
    public final List<Path> statted = new ArrayList<>();
    public final List<MountEntry> entries = new ArrayList<>();
    private int tableReads;

    @Override
    public synchronized FileStat stat(Path path) {
        statted.add(path);
        FileStat stat = stats.get(path);
        if (stat == null) {
            throw new AssertionError("unexpected stat of " + path);
        }
        return stat;
    }

    @Override
    public synchronized List<MountEntry> mountsWhere(Predicate<MountEntry> wanted) {
        tableReads++;
        return entries.stream().filter(wanted).toList();
    }

    public synchronized int tableReads() {
        return tableReads;
    }

    @Override
    public void mount(Path device, Path target, String fsType, MountOptions options) {
        throw new AssertionError("a transport must not mount");
    }

    @Override
    public void bind(Path source, Path target, MountOptions options) {
        throw new AssertionError("a transport must not bind");
    }

    @Override
    public boolean unmount(Path target) {
        throw new AssertionError("a transport must not unmount");
    }

    @Override
    public boolean isMountPoint(Path path) {
        throw new AssertionError("a transport must not check mount points");
    }
}
