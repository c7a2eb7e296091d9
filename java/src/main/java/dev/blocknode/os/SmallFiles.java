package dev.blocknode.os;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * The one way blocknode reads a small file it did not just make, whatever stands at its name now: a FIFO, a
 * device node, a directory or a huge file named like it is refused at once with an IOException saying which,
 * where {@code Files.readAllBytes} would wait for a FIFO's writer for ever, read a device until the heap runs
 * out, or open a device whose open alone does something (a watchdog).
 *
 * <p>The name is looked at first (lstat) and only a regular file is opened; it is then opened without waiting
 * ({@link LinuxNative#openForReading}: O_NONBLOCK, O_NOFOLLOW, O_NOCTTY), checked again on the opened descriptor
 * (fstat: a name swapped between the look and the open is caught there) and read no further than a bound.
 * {@link #readRegularIfPresent} never follows a symlink (the plugin's own files: records, journals, reports);
 * {@link #readRegularFollowingLinks} follows them to the end first (an operator's file: a ConfigMap's key is a
 * link, {@code level -> ..data/level}), and refuses what they end at on the same terms.
 */
public final class SmallFiles {

    private static final int FIRST_READ = 4096;

    private SmallFiles() {
    }

    /**
     * The whole of {@code file}, a regular file of at most {@code maxBytes}, not a symlink; empty when there is no
     * such file; anything else is refused.
     */
    public static Optional<byte[]> readRegularIfPresent(Path file, int maxBytes) throws IOException {
        return retyped(() -> readNatively(file, file, maxBytes));
    }

    /**
     * As {@link #readRegularIfPresent}, with symlinks at and above {@code file} followed first: for a file an
     * operator names (a flag's, a ConfigMap's key, a host's configuration). Empty when it, or what its links lead
     * to, is not there.
     */
    public static Optional<byte[]> readRegularFollowingLinks(Path file, int maxBytes) throws IOException {
        Optional<Path> real = followedToRegularFile(file);
        return real.isEmpty() ? Optional.empty() : retyped(() -> readNatively(real.get(), file, maxBytes));
    }

    /**
     * Where {@code file}'s links lead, when that is a regular file; empty when nothing is there; refused otherwise.
     * stat(2) through the links: a FIFO reached by one (/dev/fd/N of a pipe) is named as such, never opened.
     */
    private static Optional<Path> followedToRegularFile(Path file) throws IOException {
        try {
            int mode = (Integer) Files.getAttribute(file, "unix:mode");
            if (!FileStat.isRegularFile(mode)) {
                throw new IOException(file + " is " + typeOf(mode) + ", not a regular file");
            }
            return Optional.of(file.toRealPath());
        } catch (NoSuchFileException absent) {
            return Optional.empty();
        }
    }

    /**
     * {@code file} opened as {@link #readRegularFollowingLinks} opens it (links followed first, a regular file only,
     * never waited on, checked again on the descriptor), to be read as a stream, for an operator's input too large to
     * read whole before it is checked (a LUN list, bounded by its reader). Empty when it is not there.
     */
    public static Optional<InputStream> openRegularFollowingLinks(Path file) throws IOException {
        Optional<Path> real = followedToRegularFile(file);
        if (real.isEmpty()) {
            return Optional.empty();
        }
        return retyped(() -> {
            int fd;
            try {
                fd = retyped(() -> LinuxNative.openForReading(real.get().toString()));
            } catch (NoSuchPathException absent) {
                return Optional.empty();
            } catch (UnsafePathException e) {
                throw new IOException(file + " is a symbolic link (not followed; " + e.getMessage() + ")", e);
            }
            try {
                requireRegular(FileStat.of(LinuxNative.statAt(fd, "")), file);
            } catch (IOException | RuntimeException e) {
                closeQuietly(fd);
                throw e;
            }
            return Optional.of(new DescriptorStream(fd));
        });
    }

    /** A descriptor of a regular file, read by the native read(2) and closed with the stream. */
    private static final class DescriptorStream extends InputStream {
        private final int fd;
        private boolean closed;

        DescriptorStream(int fd) {
            this.fd = fd;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) <= 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            if (closed) {
                throw new IOException("stream closed");
            }
            if (length == 0) {
                return 0;
            }
            int read = retyped(() -> LinuxNative.read(fd, buffer, offset, length));
            return read == 0 ? -1 : read;
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                closeQuietly(fd);
            }
        }
    }

    private static void closeQuietly(int fd) {
        try {
            LinuxNative.close(fd);
        } catch (NativeIOException ignored) {
            // Linux frees the descriptor even when close reports an error
        }
    }

    /** Reads {@code path}, a name with no symlink left in it; messages name the file as {@code named}. */
    private static Optional<byte[]> readNatively(Path path, Path named, int maxBytes) throws IOException {
        FileStat looked;
        try {
            looked = FileStat.of(retyped(() -> LinuxNative.stat(path.toString())));
        } catch (NoSuchPathException absent) {
            return Optional.empty();
        }
        requireRegular(looked, named);
        int fd;
        try {
            fd = retyped(() -> LinuxNative.openForReading(path.toString()));
        } catch (NoSuchPathException absent) {
            return Optional.empty();
        } catch (UnsafePathException e) {
            throw new IOException(named + " is a symbolic link (not followed; " + e.getMessage() + ")", e);
        }
        try {
            requireRegular(FileStat.of(LinuxNative.statAt(fd, "")), named);
            return Optional.of(readAtMost(fd, named, maxBytes));
        } finally {
            closeQuietly(fd); // what was read stands
        }
    }

    private static void requireRegular(FileStat stat, Path named) throws IOException {
        if (!stat.isRegularFile()) {
            throw new IOException(named + " is " + typeOf(stat.mode()) + ", not a regular file");
        }
    }

    private static byte[] readAtMost(int fd, Path file, int maxBytes) throws IOException {
        byte[] buffer = new byte[Math.min(FIRST_READ, maxBytes + 1)];
        int length = 0;
        while (true) {
            if (length == buffer.length) {
                if (length > maxBytes) {
                    throw new IOException(file + " is larger than " + maxBytes + " bytes, the most this file can be");
                }
                buffer = Arrays.copyOf(buffer, (int) Math.min((long) maxBytes + 1, 2L * buffer.length));
            }
            int read = LinuxNative.read(fd, buffer, length, buffer.length - length);
            if (read == 0) {
                return Arrays.copyOf(buffer, length);
            }
            length += read;
        }
    }

    /** What a file of {@code mode} is, in words: "a FIFO", "a directory"... */
    static String typeOf(int mode) {
        return switch (mode & 0170000) {
            case 0010000 -> "a FIFO";
            case 0020000 -> "a character device";
            case 0040000 -> "a directory";
            case 0060000 -> "a block device";
            case 0120000 -> "a symbolic link";
            case 0140000 -> "a socket";
            default -> "a file of type " + Integer.toOctalString(mode & 0170000);
        };
    }
}
