package dev.blocknode.testing.machine;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.FilesystemUsage;
import dev.blocknode.os.fd.OpenedFilesystem;
import dev.blocknode.os.fd.OpenedPath;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

import static dev.blocknode.os.fd.OpenedPath.requireElement;

/**
 * A descriptor of the fake machine: it holds the node it opened, as O_PATH does (a mount made at its path
 * later is not what it names), and looks names up one element at a time in that node, following nothing.
 */
final class FakeOpenedPath implements OpenedPath {

    /** What statvfs answers for any mounted filesystem: 1 GiB, half of it free. */
    static final long TOTAL_BYTES = 1L << 30;

    private final FakeMachine machine;
    private final int descriptor;
    private final Path path;
    private final FakeNode node;
    private boolean closed;

    FakeOpenedPath(FakeMachine machine, int descriptor, Path path, FakeNode node) {
        this.machine = machine;
        this.descriptor = descriptor;
        this.path = path;
        this.node = node;
    }

    int descriptor() {
        return descriptor;
    }

    FakeNode node() {
        return node;
    }

    @Override
    public Path shown() {
        return path;
    }

    @Override
    public Path viaDescriptor() {
        requireOpen();
        return FakeMachine.viaDescriptor(descriptor);
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("descriptor of " + path + " used after close");
        }
    }

    @Override
    public Path childViaDescriptor(String name) {
        return viaDescriptor().resolve(requireElement(name));
    }

    @Override
    public FileStat stat() {
        return machine.stat(path, node);
    }

    @Override
    public FilesystemUsage usage() {
        requireOpen();
        synchronized (machine) {
            boolean readOnly = machine.top(path).map(machine::readOnly).orElse(false);
            long total = TOTAL_BYTES;
            return new FilesystemUsage(total, total / 2, total / 2, 65536, 65000, readOnly);
        }
    }

    @Override
    public Optional<FileStat> statChild(String name) throws IOException {
        Path child = path.resolve(requireElement(name));
        return Optional.ofNullable(child(child)).map(found -> machine.stat(child, found));
    }

    @Override
    public OpenedFilesystem reopenForIoctl() throws IOException {
        requireOpen();
        if (!node.isDirectory()) {
            throw Errno.notDirectory("openat", path);
        }
        return new FakeOpenedFilesystem(machine, machine.open(path, node));
    }

    @Override
    public OpenedPath openChild(String name) throws IOException {
        Path child = path.resolve(requireElement(name));
        FakeNode found = child(child);
        if (found == null) {
            throw Errno.noEntry("openat", child);
        }
        return machine.open(child, found);
    }

    @Override
    public OpenedPath openOrCreateDirectory(String name) throws IOException {
        Path child = path.resolve(requireElement(name));
        synchronized (machine) {
            FakeNode found = child(child);
            if (found == null) {
                found = new FakeNode(FakeNode.Kind.DIRECTORY, node.device, null);
                node.entries.put(name, found);
            } else if (found.kind == FakeNode.Kind.SYMLINK) {
                throw Errno.symlink("openat", child);
            } else if (!found.isDirectory()) {
                throw Errno.notDirectory("openat", child);
            }
            return machine.open(child, found);
        }
    }

    @Override
    public boolean createFile(String name) throws IOException {
        Path child = path.resolve(requireElement(name));
        synchronized (machine) {
            if (child(child) != null) {
                return false;
            }
            node.entries.put(name, new FakeNode(FakeNode.Kind.FILE, node.device, null));
            return true;
        }
    }

    @Override
    public void remove(String name, boolean directory) throws IOException {
        Path child = path.resolve(requireElement(name));
        synchronized (machine) {
            FakeNode found = child(child);
            if (found == null) {
                throw Errno.noEntry("unlinkat", child);
            }
            if (machine.isMounted(child)) {
                throw Errno.busy("unlinkat", child);
            }
            if (directory && !found.isDirectory()) {
                throw Errno.notDirectory("unlinkat", child);
            }
            if (!directory && found.isDirectory()) {
                throw Errno.isDirectory("unlinkat", child);
            }
            if (!found.entries.isEmpty()) {
                throw Errno.notEmpty("unlinkat", child);
            }
            node.entries.remove(name);
            machine.record("remove " + child);
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            machine.closed(descriptor);
        }
    }

    private FakeNode child(Path child) throws IOException {
        if (!node.isDirectory()) {
            throw Errno.notDirectory("openat", path);
        }
        return machine.entry(node, child);
    }
}
