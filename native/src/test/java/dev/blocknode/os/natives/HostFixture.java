package dev.blocknode.os.natives;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;

/**
 * A scratch directory for host tests, plus everything a test sets up in it: mounts, loop devices,
 * open files. {@link #close()} undoes all of it, newest first, even after a failed test, and only
 * deletes the directory once nothing is mounted below it.
 */
final class HostFixture implements AutoCloseable {

    final Path root;
    private final Deque<Path> mounts = new ArrayDeque<>();
    private final Deque<LoopDevice> loops = new ArrayDeque<>();
    private final Deque<Closeable> closeables = new ArrayDeque<>();

    private HostFixture(Path root) {
        this.root = root;
    }

    static HostFixture create() throws IOException {
        return new HostFixture(Files.createTempDirectory("blocknode-native-test-").toRealPath());
    }

    Path dir(String name) throws IOException {
        return Files.createDirectories(root.resolve(name));
    }

    Path file(String name) throws IOException {
        Path file = root.resolve(name);
        Files.createDirectories(file.getParent());
        return Files.createFile(file);
    }

    /** mount(2) through the code under test; a successful mount is undone by close(). */
    void mount(String source, Path target, String fsType, long flags, String data) throws NativeIOException {
        LinuxNative.mount(source, target.toString(), fsType, flags, data);
        if ((flags & LinuxNative.MS_REMOUNT) == 0) {
            mounts.push(target);
        }
    }

    /** Registers a mount made otherwise than by {@link #mount} (a bindWithAttributes), for close() to undo. */
    void mounted(Path target) {
        mounts.push(target);
    }

    /** Forgets a mount the test has unmounted itself. */
    void unmounted(Path target) {
        mounts.remove(target);
    }

    LoopDevice loop(String backingName, long size, boolean readOnly) throws IOException {
        LoopDevice loop = LoopDevice.attach(root.resolve(backingName), size, readOnly);
        loops.push(loop);
        return loop;
    }

    <T extends Closeable> T closeLater(T closeable) {
        closeables.push(closeable);
        return closeable;
    }

    @Override
    public void close() throws IOException {
        List<Throwable> errors = new ArrayList<>();
        while (!closeables.isEmpty()) {
            try {
                closeables.pop().close();
            } catch (IOException | RuntimeException e) {
                errors.add(e);
            }
        }
        while (!mounts.isEmpty()) {
            unmount(mounts.pop(), errors);
        }
        // Anything mounted below root that the test did not register (or that failed above),
        // layer by layer for stacked mounts.
        for (int round = 0; round < 8 && !mountsBelowRoot().isEmpty(); round++) {
            for (Path leftover : mountsBelowRoot()) {
                errors.add(new IllegalStateException("unregistered mount left behind: " + leftover));
                unmount(leftover, errors);
            }
        }
        while (!loops.isEmpty()) {
            try {
                loops.pop().close();
            } catch (IOException | RuntimeException e) {
                errors.add(e);
            }
        }
        List<Path> stillMounted = mountsBelowRoot();
        if (stillMounted.isEmpty()) {
            try {
                deleteTree(root);
            } catch (IOException e) {
                errors.add(e);
            }
        } else {
            // Never delete through a mount: that would delete the mounted file system's content.
            errors.add(new IllegalStateException("still mounted, not deleting " + root + ": " + stillMounted));
        }
        if (!errors.isEmpty()) {
            IOException failure = new IOException("cleanup of " + root + " failed");
            errors.forEach(failure::addSuppressed);
            throw failure;
        }
    }

    private static void unmount(Path target, List<Throwable> errors) {
        if (!isListedMountPoint(target)) {
            return;
        }
        try {
            LinuxNative.umount2(target.toString(), 0);
            return;
        } catch (NativeIOException | RuntimeException e) {
            errors.add(e);
        }
        try {
            LinuxNative.umount2(target.toString(), LinuxNative.MNT_DETACH);
        } catch (NativeIOException | RuntimeException e) {
            errors.add(e);
            try {
                Commands.run("umount", "-l", target.toString());
            } catch (IOException e2) {
                errors.add(e2);
            }
        }
    }

    private static boolean isListedMountPoint(Path target) {
        try {
            return mountPoints().contains(target.toString());
        } catch (IOException e) {
            return true;
        }
    }

    /** Mount points at or below root, deepest first. */
    private List<Path> mountsBelowRoot() throws IOException {
        List<Path> below = new ArrayList<>();
        for (String mountPoint : mountPoints()) {
            Path path = Path.of(mountPoint);
            if (path.startsWith(root) && !below.contains(path)) {
                below.add(path);
            }
        }
        below.sort(Comparator.comparingInt(Path::getNameCount).reversed());
        return below;
    }

    /** Field 5 of every /proc/self/mountinfo line, unescaped; stacked mounts appear repeatedly. */
    static List<String> mountPoints() throws IOException {
        List<String> result = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String[] fields = line.split(" ");
            if (fields.length > 4) {
                result.add(unescape(fields[4]));
            }
        }
        return result;
    }

    /**
     * The per-mount options (field 6 of /proc/self/mountinfo, e.g. "ro,nosuid,relatime") of the top mount at
     * {@code mountPoint}, as a list; empty when nothing is mounted there.
     */
    static List<String> mountOptions(Path mountPoint) throws IOException {
        List<String> options = List.of();
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String[] fields = line.split(" ");
            if (fields.length > 5 && unescape(fields[4]).equals(mountPoint.toString())) {
                options = List.of(fields[5].split(",")); // later lines are mounts stacked on earlier ones
            }
        }
        return options;
    }

    private static String unescape(String field) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length()) {
                sb.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                if (exc != null) {
                    throw exc;
                }
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
