package dev.blocknode.os;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.os.natives.NoSuchPathException;
import dev.blocknode.os.natives.UnsafePathException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * Reads a small file the plugin keeps itself (a staging record) without trusting what its name is now: opened
 * without following a final symlink and without waiting ({@link LinuxNative#openForReading}), checked to be a
 * regular file on the opened descriptor, and read no further than a bound. A FIFO, a device node, a symlink (to
 * /dev/zero, or anywhere) or a huge file named like a record is refused at once with an IOException saying
 * which, where {@code Files.readAllBytes} would wait for a writer for ever or read until the heap runs out.
 */
public final class SmallFiles {

    private static final int FIRST_READ = 4096;

    private SmallFiles() {
    }

    /**
     * The whole of {@code file}, a regular file of at most {@code maxBytes}; empty when there is no such file;
     * anything else is refused.
     */
    public static Optional<byte[]> readRegularIfPresent(Path file, int maxBytes) throws IOException {
        return retyped(() -> readNatively(file, maxBytes));
    }

    private static Optional<byte[]> readNatively(Path file, int maxBytes) throws IOException {
        int fd;
        try {
            fd = LinuxNative.openForReading(file.toString());
        } catch (NoSuchPathException absent) {
            return Optional.empty();
        } catch (UnsafePathException e) {
            throw new IOException(file + " is a symbolic link (not followed; " + e.getMessage() + ")", e);
        }
        try {
            FileStat stat = FileStat.of(LinuxNative.statAt(fd, ""));
            if (!stat.isRegularFile()) {
                throw new IOException(file + " is " + typeOf(stat.mode()) + ", not a regular file");
            }
            return Optional.of(readAtMost(fd, file, maxBytes));
        } finally {
            try {
                LinuxNative.close(fd);
            } catch (NativeIOException ignored) {
                // Linux frees the descriptor even when close reports an error; what was read stands
            }
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

    private static String typeOf(int mode) {
        return switch (mode & 0170000) {
            case 0010000 -> "a FIFO";
            case 0020000 -> "a character device";
            case 0040000 -> "a directory";
            case 0060000 -> "a block device";
            case 0140000 -> "a socket";
            default -> "a file of type " + Integer.toOctalString(mode & 0170000);
        };
    }
}
