package dev.blocknode.state;

import com.google.protobuf.InvalidProtocolBufferException;
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
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Logger;
import java.util.zip.CRC32C;

/**
 * Per-volume staging records under {@code <state-dir>/volumes}, one file per volume, named by the SHA-256
 * of the volume id (any id, any length, any bytes, fits a file name). Every write is atomic and durable:
 * write a temp file, fsync it, rename it over the old one, fsync the directory. A crash leaves either the
 * old record or the new one, never a torn one.
 *
 * <p>A file is a 4-byte magic, the CRC32C of the rest, then the record as binary protobuf: parsing it costs
 * about a microsecond where text format cost twenty, and the checksum catches the damage that a lenient
 * binary parse would not (a truncated record can parse "successfully" with fields missing).
 *
 * <p>The plugin is the only writer of its state directory, so every record is read once, when the store is
 * opened, and then served from memory; the cache is changed only after the rename that made a change
 * visible on disk, so it always equals what a restart would read. A file that cannot be read is remembered
 * and reported by {@link #load} of its volume and by {@link #all}, never dropped. Records of the older
 * text format ({@code .txtpb}) are rewritten in the binary format when the store is opened.
 */
public final class RecordStore {

    public static final int FORMAT_VERSION = 1;
    private static final String SUFFIX = ".pb";
    private static final String TEXT_SUFFIX = ".txtpb";
    private static final String TEMP_SUFFIX = ".tmp";
    private static final byte[] MAGIC = {'b', 'n', 'r', '1'};
    private static final int HEADER = MAGIC.length + Integer.BYTES;
    /** Saves of one volume are serialized so that the cache ends up with the record the last rename put. */
    private static final int LOCK_STRIPES = 64;
    private static final Logger LOG = Logger.getLogger(RecordStore.class.getName());

    private final Path directory;
    private final String directoryName;
    private final Map<String, StagingRecord> records = new ConcurrentHashMap<>();
    /** Files that could not be read, by file name, with the reason; kept until the volume is saved or deleted. */
    private final Map<String, IOException> unreadable = new ConcurrentHashMap<>();
    private final ReentrantLock[] locks = new ReentrantLock[LOCK_STRIPES];

    public RecordStore(Path stateDir) throws IOException {
        this.directory = stateDir.resolve("volumes");
        this.directoryName = directory.toString();
        Files.createDirectories(directory);
        for (int i = 0; i < locks.length; i++) {
            locks[i] = new ReentrantLock();
        }
        loadAll();
        upgradeTextRecords();
    }

    public Path directory() {
        return directory;
    }

    /** @throws IOException when the volume's record file exists but could not be read or is corrupt */
    public Optional<StagingRecord> load(String volumeId) throws IOException {
        StagingRecord record = records.get(volumeId);
        if (record != null) {
            return Optional.of(record);
        }
        if (!unreadable.isEmpty()) {
            IOException failure = unreadable.get(fileNameFor(volumeId));
            if (failure != null) {
                throw new IOException(failure.getMessage(), failure);
            }
        }
        return Optional.empty();
    }

    public void save(StagingRecord record) throws IOException {
        StagingRecord stamped = record.toBuilder()
                .setFormatVersion(FORMAT_VERSION)
                .setUpdatedUnixMillis(System.currentTimeMillis())
                .build();
        String volumeId = record.getVolumeId();
        String name = fileNameFor(volumeId);
        Path target = directory.resolve(name);
        Path temp = directory.resolve(name + TEMP_SUFFIX);
        ReentrantLock lock = lockFor(name);
        lock.lock();
        try {
            byte[] bytes = encode(stamped);
            try {
                writeDurably(temp, bytes);
                replace(temp, target);
            } catch (IOException e) {
                // Both leave the old record and no temp file; a full disk is named as such (kubelet and an
                // operator act differently on "no space" than on a broken state dir).
                if (isFull(bytes.length)) {
                    throw new StateDirFullException(directory, e);
                }
                throw e;
            }
            // The new record is what the directory shows from here on, even if the fsync below fails.
            records.put(volumeId, stamped);
            unreadable.remove(name);
            LinuxNative.fsync(directoryName);
        } finally {
            lock.unlock();
        }
    }

    public void delete(String volumeId) throws IOException {
        String name = fileNameFor(volumeId);
        ReentrantLock lock = lockFor(name);
        lock.lock();
        try {
            boolean deleted = Files.deleteIfExists(directory.resolve(name));
            records.remove(volumeId);
            unreadable.remove(name);
            if (deleted) {
                LinuxNative.fsync(directoryName);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Every record; a record file that cannot be read is reported (an IOException naming it), never dropped. */
    public List<StagingRecord> all() throws IOException {
        if (!unreadable.isEmpty()) {
            Map<String, IOException> sorted = new TreeMap<>(unreadable);
            IOException first = sorted.values().iterator().next();
            IOException failure = new IOException(sorted.size() == 1 ? first.getMessage()
                    : sorted.size() + " staging records cannot be read; the first: " + first.getMessage(), first);
            throw failure;
        }
        return new ArrayList<>(records.values());
    }

    Path fileFor(String volumeId) {
        return directory.resolve(fileNameFor(volumeId));
    }

    private void loadAll() throws IOException {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*" + SUFFIX)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                try {
                    StagingRecord record = decode(file, Files.readAllBytes(file));
                    requireNamedAfterItsVolume(file, record);
                    records.put(record.getVolumeId(), record);
                } catch (IOException e) {
                    unreadable.put(name, e);
                    LOG.severe(e.getMessage());
                }
            }
        }
    }

    /**
     * Rewrites each record of the text format in the binary one (durably, like any save), then removes the
     * text file. A crash in between leaves both: the binary one was written from the text one, so the text
     * file is simply removed on the next start. A text record that cannot be parsed stays, and is reported.
     */
    private void upgradeTextRecords() throws IOException {
        List<Path> textFiles = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*" + TEXT_SUFFIX)) {
            files.forEach(textFiles::add);
        }
        for (Path textFile : textFiles) {
            String textName = textFile.getFileName().toString();
            String name = textName.substring(0, textName.length() - TEXT_SUFFIX.length()) + SUFFIX;
            if (unreadable.containsKey(name)) {
                continue; // both stay for an operator to look at; the binary one is reported
            }
            if (Files.exists(directory.resolve(name))) {
                Files.delete(textFile); // upgraded before a crash: the binary record is the newer one
                LinuxNative.fsync(directoryName);
                continue;
            }
            StagingRecord record;
            try {
                record = parseText(textFile);
                requireNamedAfterItsVolume(directory.resolve(name), record);
            } catch (IOException e) {
                unreadable.put(name, e);
                LOG.severe(e.getMessage());
                continue;
            }
            // save() stamps the current format version, so keep the record's own by writing it directly.
            Path temp = directory.resolve(name + TEMP_SUFFIX);
            writeDurably(temp, encode(record));
            replace(temp, directory.resolve(name));
            LinuxNative.fsync(directoryName);
            records.put(record.getVolumeId(), record);
            Files.delete(textFile);
            LinuxNative.fsync(directoryName);
            LOG.info(() -> "rewrote staging record " + textFile + " of volume " + record.getVolumeId()
                    + " in the binary format as " + name);
        }
    }

    /** Renames {@code temp} over {@code target} atomically; on failure the temp file is removed. */
    private void replace(Path temp, Path target) throws IOException {
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
    private boolean isFull(int recordBytes) {
        try {
            return Files.getFileStore(directory).getUnallocatedSpace() < recordBytes + 4096L;
        } catch (IOException e) {
            return false;
        }
    }

    private static void deleteQuietly(Path file, IOException failure) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException cleanup) {
            failure.addSuppressed(cleanup);
        }
    }

    private static void writeDurably(Path temp, byte[] bytes) throws IOException {
        try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
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

    static byte[] encode(StagingRecord record) {
        byte[] payload = record.toByteArray();
        CRC32C crc = new CRC32C();
        crc.update(payload);
        return ByteBuffer.allocate(HEADER + payload.length).put(MAGIC).putInt((int) crc.getValue()).put(payload)
                .array();
    }

    private static StagingRecord decode(Path file, byte[] bytes) throws IOException {
        if (bytes.length < HEADER || !Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new IOException("staging record " + file + " is corrupt: it does not start with the record"
                    + " header (" + bytes.length + " bytes)");
        }
        int expected = ByteBuffer.wrap(bytes, MAGIC.length, Integer.BYTES).getInt();
        CRC32C crc = new CRC32C();
        crc.update(bytes, HEADER, bytes.length - HEADER);
        if ((int) crc.getValue() != expected) {
            throw new IOException("staging record " + file + " is corrupt: checksum mismatch");
        }
        StagingRecord record;
        try {
            record = StagingRecord.parseFrom(ByteBuffer.wrap(bytes, HEADER, bytes.length - HEADER));
        } catch (InvalidProtocolBufferException e) {
            throw new IOException("staging record " + file + " is corrupt: " + e.getMessage(), e);
        }
        return requireKnownVersion(file, record.getFormatVersion(), record);
    }

    private static StagingRecord parseText(Path file) throws IOException {
        String text = Files.readString(file, StandardCharsets.UTF_8);
        StagingRecord.Builder builder = StagingRecord.newBuilder();
        try {
            TextFormat.Parser.newBuilder().setAllowUnknownFields(true).build().merge(text, builder);
        } catch (TextFormat.ParseException e) {
            throw new IOException("staging record " + file + " is corrupt: " + e.getMessage(), e);
        }
        return requireKnownVersion(file, builder.getFormatVersion(), builder.build());
    }

    private static StagingRecord requireKnownVersion(Path file, int version, StagingRecord record)
            throws IOException {
        if (version > FORMAT_VERSION) {
            throw new IOException("staging record " + file + " has format version " + version
                    + ", newer than this plugin understands (" + FORMAT_VERSION + ")");
        }
        return record;
    }

    /** A record under another volume's name would be found by the wrong volume id: refuse it. */
    private void requireNamedAfterItsVolume(Path file, StagingRecord record) throws IOException {
        if (!file.getFileName().toString().equals(fileNameFor(record.getVolumeId()))) {
            throw new IOException("staging record " + file + " holds volume " + record.getVolumeId()
                    + ", whose record would be " + fileNameFor(record.getVolumeId()));
        }
    }

    private ReentrantLock lockFor(String fileName) {
        return locks[Math.floorMod(fileName.hashCode(), locks.length)];
    }

    private static String fileNameFor(String volumeId) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(volumeId.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest) + SUFFIX;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
