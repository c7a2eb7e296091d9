package dev.blocknode.state;

import com.google.protobuf.TextFormat;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.state.v1.StagingRecord;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * Per-volume staging records under {@code <state-dir>/volumes}, one file per volume, named by the SHA-256
 * of the volume id (any id, any length, any bytes, fits a file name). Every write is atomic and durable:
 * write a temp file, fsync it, rename it over the old one, fsync the directory. A crash leaves either the
 * old record or the new one, never a torn one.
 */
public final class RecordStore {

    public static final int FORMAT_VERSION = 1;
    private static final String SUFFIX = ".txtpb";

    private final Path directory;
    private final TextFormat.Parser parser = TextFormat.Parser.newBuilder().setAllowUnknownFields(true).build();

    public RecordStore(Path stateDir) throws IOException {
        this.directory = stateDir.resolve("volumes");
        Files.createDirectories(directory);
    }

    public Path directory() {
        return directory;
    }

    public Optional<StagingRecord> load(String volumeId) throws IOException {
        return read(fileFor(volumeId));
    }

    public void save(StagingRecord record) throws IOException {
        StagingRecord stamped = record.toBuilder()
                .setFormatVersion(FORMAT_VERSION)
                .setUpdatedUnixMillis(System.currentTimeMillis())
                .build();
        Path target = fileFor(record.getVolumeId());
        Path temp = directory.resolve(target.getFileName() + ".tmp");
        byte[] bytes = TextFormat.printer().printToString(stamped).getBytes(StandardCharsets.UTF_8);
        try {
            try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer buffer = ByteBuffer.wrap(bytes);
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
                channel.force(true);
            }
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            deleteQuietly(temp);
            throw new IOException("state directory " + directory + " does not support atomic rename", e);
        } catch (IOException e) {
            // The old record, if any, is untouched; a half-written temp file must not stay behind.
            deleteQuietly(temp);
            if (isFull(bytes.length)) {
                throw new StateDirFullException(directory, e);
            }
            throw e;
        }
        LinuxNative.fsync(directory.toString());
    }

    public void delete(String volumeId) throws IOException {
        if (Files.deleteIfExists(fileFor(volumeId))) {
            LinuxNative.fsync(directory.toString());
        }
    }

    /**
     * True when the state dir's filesystem has no room for a record (statvfs): Java reports ENOSPC only as
     * a localized message, so the filesystem is asked instead. Free blocks, not those available to non-root:
     * root writes into the reserve.
     */
    private boolean isFull(int recordBytes) {
        try {
            return Files.getFileStore(directory).getUnallocatedSpace() < recordBytes + 4096L;
        } catch (IOException e) {
            return false;
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // the caller reports the failure that matters; a retried save overwrites the temp file
        }
    }

    /** Every record on disk; a record that cannot be parsed is reported, never silently dropped. */
    public List<StagingRecord> all() throws IOException {
        List<StagingRecord> records = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*" + SUFFIX)) {
            for (Path file : files) {
                read(file).ifPresent(records::add);
            }
        }
        return records;
    }

    private Optional<StagingRecord> read(Path file) throws IOException {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException absent) {
            return Optional.empty();
        }
        StagingRecord.Builder builder = StagingRecord.newBuilder();
        try {
            parser.merge(text, builder);
        } catch (TextFormat.ParseException e) {
            throw new IOException("staging record " + file + " is corrupt: " + e.getMessage(), e);
        }
        if (builder.getFormatVersion() > FORMAT_VERSION) {
            throw new IOException("staging record " + file + " has format version " + builder.getFormatVersion()
                    + ", newer than this plugin understands (" + FORMAT_VERSION + ")");
        }
        return Optional.of(builder.build());
    }

    Path fileFor(String volumeId) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(volumeId.getBytes(StandardCharsets.UTF_8));
            return directory.resolve(HexFormat.of().formatHex(digest) + SUFFIX);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
