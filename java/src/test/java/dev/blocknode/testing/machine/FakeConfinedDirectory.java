package dev.blocknode.testing.machine;

import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.os.fd.ConfinedDirectory;
import dev.blocknode.os.fd.OpenedPath;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The fake machine's {@link ConfinedDirectory}, with the host's rules: every element resolved from the one
 * before, "." and ".." refused (EXDEV), a symlink on the way refused (ELOOP), a missing element or a file
 * where a directory must be is NoSuchPath; the last element is not followed (a symlink comes back as the
 * link) unless it must be a directory, when a symlink there is ELOOP too.
 */
final class FakeConfinedDirectory implements ConfinedDirectory {

    private final FakeMachine machine;
    private final Path directory;

    FakeConfinedDirectory(FakeMachine machine, Path directory) {
        this.machine = machine;
        this.directory = directory;
        machine.directories(directory);
    }

    @Override
    public Path path() {
        return directory;
    }

    @Override
    public OpenedPath open(Path relative) throws IOException {
        return open(relative, false, false);
    }

    @Override
    public Optional<OpenedPath> openDirectoryIfPresent(Path relative) throws IOException {
        try {
            return Optional.of(open(relative, true, false));
        } catch (NoSuchPathException absent) {
            return Optional.empty();
        }
    }

    @Override
    public OpenedPath openCreatingDirectories(Path relative) throws IOException {
        return open(relative, true, true);
    }

    private OpenedPath open(Path relative, boolean lastIsDirectory, boolean create) throws IOException {
        if (relative.isAbsolute()) {
            throw new IllegalArgumentException("not a relative path: " + relative);
        }
        synchronized (machine) {
            Path at = directory;
            FakeNode node = machine.visible(directory);
            if (relative.toString().isEmpty()) {
                return machine.open(at, node);
            }
            int count = relative.getNameCount();
            for (int i = 0; i < count; i++) {
                String name = relative.getName(i).toString();
                if (name.equals(".") || name.equals("..")) {
                    throw Errno.escape("openBeneath", relative);
                }
                boolean last = i == count - 1;
                Path next = at.resolve(name);
                FakeNode found = machine.entry(node, next);
                if (found == null && create) {
                    found = new FakeNode(FakeNode.Kind.DIRECTORY, node.device, null);
                    node.entries.put(name, found);
                }
                if (found == null) {
                    throw Errno.noEntry("openBeneath", relative);
                }
                boolean mustBeDirectory = !last || lastIsDirectory;
                if (found.kind == FakeNode.Kind.SYMLINK && mustBeDirectory) {
                    throw Errno.symlink("openBeneath", relative);
                }
                if (mustBeDirectory && !found.isDirectory()) {
                    throw Errno.notDirectory("openBeneath", relative);
                }
                at = next;
                node = found;
            }
            return machine.open(at, node);
        }
    }
}
