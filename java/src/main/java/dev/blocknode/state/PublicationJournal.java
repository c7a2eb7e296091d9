package dev.blocknode.state;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.blocknode.os.SmallFiles;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.PublicationsRecord;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Logger;
import java.util.zip.CRC32C;

/**
 * The publications of every volume, for one boot, as an append-only journal: each change appends the
 * volume's whole set of publications (empty when it has none left) in ONE write(2) to a file held open,
 * and the last entry of a volume wins. Nothing is fsynced (see {@link RecordStore} for why that is
 * enough), so a change costs one system call, where replacing a file of its own costs a create, a write,
 * a close and a rename (about 60 us of kernel time on ext4 for each publish and unpublish).
 *
 * <p>An entry is its payload's length and CRC32C, then a {@link PublicationsRecord} as binary protobuf.
 * Reading stops at the first entry that is incomplete or fails its checksum and cuts the file there: a
 * write that a kill cut short (the kernel can stop a write between pages) is the change of a call that
 * never returned, whose caller retries it. When the journal has grown to several times what is live, it
 * is rewritten with one entry per volume that has publications (a temp file renamed over it).
 */
final class PublicationJournal implements Closeable {

    static final String FILE_NAME = "journal";
    private static final int ENTRY_HEADER = 2 * Integer.BYTES;
    /** Far above any real entry (a volume with thousands of publications); a larger length is damage. */
    private static final int MAX_ENTRY = 16 << 20;
    /**
     * The largest journal read at start: compaction keeps it within {@link #COMPACT_RATIO} times what is live
     * (a thousand volumes with ten publications each are about 1 MiB live), so a larger file is not this
     * plugin's journal, and is not read into the heap.
     */
    static final long MAX_JOURNAL_BYTES = 64L << 20;
    private static final String FIX = "; move it away to start (the publications of this boot it held are then"
            + " unknown to the plugin)";
    private static final long COMPACT_FLOOR = 256 << 10;
    private static final int COMPACT_RATIO = 4;
    private static final Logger LOG = Logger.getLogger(PublicationJournal.class.getName());

    private final Path file;
    private final ReentrantLock lock = new ReentrantLock();
    /** What the journal says now, by volume: what a compaction writes and what a reopen would read. */
    private final Map<String, Map<String, PublicationRecord>> live = new HashMap<>();
    private final Map<String, Integer> liveEntryBytes = new HashMap<>();
    private long liveBytes;
    private FileChannel channel;
    /** Opened by {@link #readOnly}: nothing is written, truncated or compacted. */
    private final boolean readOnly;
    private long size;

    /**
     * Opens the journal in {@code directory} (creating it when absent) and reads it. It must be a regular file of
     * at most {@link #MAX_JOURNAL_BYTES}, opened without following a symlink: anything else is refused at once
     * (the journal of every volume's publications cannot be skipped: without it an unstage could not tell a
     * published volume), where a symlink to /dev/zero would have taken every publication silently and a huge
     * file the heap.
     */
    static PublicationJournal open(Path directory) throws IOException {
        PublicationJournal journal = new PublicationJournal(directory.resolve(FILE_NAME), false);
        Path file = journal.file;
        if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            journal.requireRegular(); // looked at before it is opened: a FIFO or a device is never opened
        }
        try {
            journal.channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw new IOException("publications journal " + file + " cannot be opened (a symbolic link is not"
                    + " followed): " + e.getMessage() + FIX, e);
        }
        try {
            journal.requireRegular();
            if (journal.channel.size() > MAX_JOURNAL_BYTES) {
                throw new IOException("publications journal " + file + " is " + journal.channel.size()
                        + " bytes, more than the " + MAX_JOURNAL_BYTES + " a journal can be" + FIX);
            }
            journal.replay(journal.readAll());
        } catch (IOException | RuntimeException e) {
            journal.channel.close();
            throw e;
        }
        return journal;
    }

    /**
     * The publications a journal holds, read without changing anything: the file is read through {@link SmallFiles}
     * (never created, never waited on: a FIFO, a device, a symlink or a file over {@link #MAX_JOURNAL_BYTES} is
     * refused at once, naming it), and a torn tail is skipped, not cut off ({@code blocknode status}). Empty when
     * there is no journal.
     */
    static Map<String, Map<String, PublicationRecord>> readOnly(Path directory) throws IOException {
        Path file = directory.resolve(FILE_NAME);
        Optional<byte[]> bytes;
        try {
            bytes = SmallFiles.readRegularIfPresent(file, Math.toIntExact(MAX_JOURNAL_BYTES));
        } catch (IOException e) {
            throw new IOException("publications journal " + e.getMessage(), e);
        }
        if (bytes.isEmpty()) {
            return Map.of();
        }
        PublicationJournal journal = new PublicationJournal(file, true);
        journal.replay(ByteBuffer.wrap(bytes.get()));
        return journal.all();
    }

    private PublicationJournal(Path file, boolean readOnly) {
        this.file = file;
        this.readOnly = readOnly;
    }

    /** The publications of every volume that has some, as the journal holds them. */
    Map<String, Map<String, PublicationRecord>> all() {
        lock.lock();
        try {
            return Map.copyOf(live);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Records that {@code volumeId} now has exactly {@code publications} (none: it has no publications).
     * On failure the journal is as it was.
     */
    void record(String volumeId, Map<String, PublicationRecord> publications) throws IOException {
        ByteBuffer entry = entry(PublicationsRecord.newBuilder()
                .setFormatVersion(RecordStore.FORMAT_VERSION)
                .setVolumeId(volumeId)
                .putAllPublications(publications)
                .build());
        lock.lock();
        try {
            if (publications.isEmpty() && !live.containsKey(volumeId)) {
                return; // nothing to say: the journal already has no publications for it
            }
            int length = entry.remaining();
            append(entry);
            remember(volumeId, publications, length);
            if (size > COMPACT_FLOOR && size > COMPACT_RATIO * liveBytes) {
                compact();
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() throws IOException {
        lock.lock();
        try {
            channel.close();
        } finally {
            lock.unlock();
        }
    }

    private void append(ByteBuffer entry) throws IOException {
        try {
            while (entry.hasRemaining()) {
                channel.write(entry, size + entry.position());
            }
            size += entry.limit();
        } catch (IOException e) {
            // A partial entry would hide every later one from a reader: cut it off again.
            try {
                channel.truncate(size);
            } catch (IOException cut) {
                e.addSuppressed(cut);
            }
            throw RecordFiles.fullOrAsIs(file.getParent(), entry.limit(), e);
        }
    }

    private void remember(String volumeId, Map<String, PublicationRecord> publications, int entryBytes) {
        Integer before = liveEntryBytes.remove(volumeId);
        if (before != null) {
            liveBytes -= before;
        }
        if (publications.isEmpty()) {
            live.remove(volumeId);
        } else {
            live.put(volumeId, Map.copyOf(publications));
            liveEntryBytes.put(volumeId, entryBytes);
            liveBytes += entryBytes;
        }
    }

    private void requireRegular() throws IOException {
        BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class,
                LinkOption.NOFOLLOW_LINKS);
        if (!attributes.isRegularFile()) {
            throw new IOException("publications journal " + file + " is not a regular file" + FIX);
        }
    }

    private ByteBuffer readAll() throws IOException {
        ByteBuffer bytes = ByteBuffer.allocate(Math.toIntExact(channel.size()));
        while (bytes.hasRemaining() && channel.read(bytes, bytes.position()) >= 0) {
            // read it all
        }
        return bytes.flip();
    }

    private void replay(ByteBuffer bytes) throws IOException {
        long length = bytes.remaining();
        long good = 0;
        while (bytes.remaining() >= ENTRY_HEADER) {
            int start = bytes.position();
            int payloadLength = bytes.getInt();
            int expected = bytes.getInt();
            if (payloadLength < 0 || payloadLength > MAX_ENTRY || payloadLength > bytes.remaining()) {
                break;
            }
            CRC32C crc = new CRC32C();
            crc.update(bytes.array(), bytes.position(), payloadLength);
            if ((int) crc.getValue() != expected) {
                break;
            }
            PublicationsRecord record;
            try {
                record = PublicationsRecord.parseFrom(ByteBuffer.wrap(bytes.array(), bytes.position(), payloadLength));
            } catch (InvalidProtocolBufferException e) {
                break;
            }
            if (record.getFormatVersion() > RecordStore.FORMAT_VERSION) {
                throw new IOException("publications journal " + file + " has an entry of format version "
                        + record.getFormatVersion() + ", newer than this plugin understands ("
                        + RecordStore.FORMAT_VERSION + ")");
            }
            bytes.position(bytes.position() + payloadLength);
            remember(record.getVolumeId(), record.getPublicationsMap(), bytes.position() - start);
            good = bytes.position();
        }
        size = good;
        if (good < length && !readOnly) {
            long cut = length - good;
            LOG.warning(() -> "publications journal " + file + ": the last " + cut + " bytes are not a complete"
                    + " entry (a write cut short by a kill); cut off at " + size);
            channel.truncate(good);
        }
    }

    /** Rewrites the journal with what is live; a failure leaves the old one in use (and is only logged). */
    private void compact() throws IOException {
        Path temp = file.resolveSibling(FILE_NAME + ".tmp");
        Files.deleteIfExists(temp); // a leftover, or anything named like it: never written through
        FileChannel compacted = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        long written = 0;
        try {
            for (Map.Entry<String, Map<String, PublicationRecord>> volume : live.entrySet()) {
                ByteBuffer entry = entry(PublicationsRecord.newBuilder()
                        .setFormatVersion(RecordStore.FORMAT_VERSION)
                        .setVolumeId(volume.getKey())
                        .putAllPublications(volume.getValue())
                        .build());
                while (entry.hasRemaining()) {
                    written += compacted.write(entry, written);
                }
            }
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            // The old journal is intact and still open: carry on appending to it, and try again later.
            compacted.close();
            Files.deleteIfExists(temp);
            LOG.warning(() -> "could not compact publications journal " + file + ": " + e.getMessage());
            return;
        }
        FileChannel old = channel;
        channel = compacted;
        size = written;
        old.close();
    }

    private static ByteBuffer entry(PublicationsRecord record) {
        byte[] payload = record.toByteArray();
        CRC32C crc = new CRC32C();
        crc.update(payload);
        return ByteBuffer.allocate(ENTRY_HEADER + payload.length).putInt(payload.length)
                .putInt((int) crc.getValue()).put(payload).flip();
    }
}
