package dev.blocknode.state;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * How a staging record file is replaced so that a crash leaves the old one or the new one, never a torn one:
 * write a temp file beside it, fsync it, rename it over the old one (the caller fsyncs the directory, once
 * for what it changed). Apart from {@link RecordStore}, which decides what to write and when.
 */
final class RecordFiles {

    private static final String TEMP_SUFFIX = ".tmp";

    private RecordFiles() {
    }

    /** Replaces {@code directory/name} with {@code bytes}, durably once the caller fsyncs the directory. */
    static void replaceDurably(Path directory, String name, byte[] bytes) throws IOException {
        Path temp = directory.resolve(name + TEMP_SUFFIX);
        try {
            writeDurably(temp, bytes);
            replace(directory, temp, directory.resolve(name));
        } catch (IOException e) {
            // Both leave the old record and no temp file; a full disk is named as such (kubelet and an
            // operator act differently on "no space" than on a broken state dir).
            throw fullOrAsIs(directory, bytes.length, e);
        }
    }

    /** Renames {@code temp} over {@code target} atomically; on failure the temp file is removed. */
    private static void replace(Path directory, Path temp, Path target) throws IOException {
        try {
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            deleteQuietly(temp, e);
            if (e instanceof AtomicMoveNotSupportedException) {
                throw new IOException("state directory " + directory + " does not support atomic rename", e);
            }
            throw e;
        }
    }

    /**
     * True when the state dir's filesystem has no room for a record: Java reports ENOSPC only as a
     * localized message, so the filesystem is asked instead. Free blocks, not those available to non-root:
     * root writes into the reserve.
     */
    static IOException fullOrAsIs(Path directory, int recordBytes, IOException failure) {
        try {
            if (Files.getFileStore(directory).getUnallocatedSpace() < recordBytes + 4096L) {
                return new StateDirFullException(directory, failure);
            }
        } catch (IOException e) {
            failure.addSuppressed(e);
        }
        return failure;
    }

    private static void deleteQuietly(Path file, IOException failure) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException cleanup) {
            failure.addSuppressed(cleanup);
        }
    }

    private static void writeDurably(Path temp, byte[] bytes) throws IOException {
        // A leftover temp file is replaced; a symlink named like one is removed, never written through.
        Files.deleteIfExists(temp);
        try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS)) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        } catch (IOException e) {
            deleteQuietly(temp, e);
            throw e;
        }
    }
}
