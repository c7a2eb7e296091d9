package dev.blocknode.os.fd;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.FilesystemUsage;
import dev.blocknode.os.natives.LinuxNative;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

import static dev.blocknode.os.SyscallException.retyped;
import static dev.blocknode.os.fd.OpenedPath.requireElement;

/**
 * The host's {@link OpenedPath}: an O_PATH descriptor (its last element not followed), every operation a
 * syscall relative to it, its failure re-typed as os's ({@link dev.blocknode.os.SyscallException}).
 */
final class DescriptorPath implements OpenedPath {

    /** How a syscall that takes only a path (mount, umount2) is given a descriptor instead. */
    private static final Path OWN_DESCRIPTORS = Path.of("/proc/self/fd");

    private final int fd;
    private final Path shown;
    private boolean closed;

    DescriptorPath(int fd, Path shown) {
        this.fd = fd;
        this.shown = shown;
    }

    @Override
    public Path shown() {
        return shown;
    }

    @Override
    public Path viaDescriptor() {
        return OWN_DESCRIPTORS.resolve(Integer.toString(fd));
    }

    @Override
    public Path childViaDescriptor(String name) {
        return viaDescriptor().resolve(requireElement(name));
    }

    @Override
    public FileStat stat() throws IOException {
        return retyped(() -> FileStat.of(LinuxNative.statAt(fd, "")));
    }

    @Override
    public FilesystemUsage usage() throws IOException {
        return retyped(() -> FilesystemUsage.of(LinuxNative.fstatvfs(fd)));
    }

    @Override
    public Optional<FileStat> statChild(String name) throws IOException {
        long[] stat = retyped(() -> LinuxNative.statAt(fd, requireElement(name)));
        return stat == null ? Optional.empty() : Optional.of(FileStat.of(stat));
    }

    @Override
    public OpenedFilesystem reopenForIoctl() throws IOException {
        return new DescriptorFilesystem(retyped(() -> LinuxNative.reopenDirectory(fd)), shown);
    }

    @Override
    public OpenedPath openChild(String name) throws IOException {
        return new DescriptorPath(retyped(() -> LinuxNative.openBeneath(fd, requireElement(name), 0)),
                shown.resolve(name));
    }

    @Override
    public OpenedPath openOrCreateDirectory(String name) throws IOException {
        return new DescriptorPath(retyped(() -> LinuxNative.openBeneath(fd, requireElement(name),
                LinuxNative.OPEN_CREATE_DIRECTORIES)), shown.resolve(name));
    }

    @Override
    public boolean createFile(String name) throws IOException {
        return retyped(() -> LinuxNative.createFileAt(fd, requireElement(name)));
    }

    @Override
    public void remove(String name, boolean directory) throws IOException {
        retyped(() -> LinuxNative.unlinkAt(fd, requireElement(name), directory));
    }

    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            retyped(() -> LinuxNative.close(fd));
        }
    }
}
