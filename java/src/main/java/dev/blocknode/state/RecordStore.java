package dev.blocknode.state;

import dev.blocknode.os.Fsync;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.SmallFiles;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagingRecord;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Logger;

/**
 * Per-volume staging records under {@code <state-dir>/volumes}, one file per volume, named by the SHA-256
 * of the volume id (any id, any length, any bytes, fits a file name). Every write of a staging record is
 * atomic and durable: write a temp file, fsync it, rename it over the old one, fsync the directory. A crash
 * leaves either the old record or the new one, never a torn one.
 *
 * <p>A record's publications are kept apart, in a {@link PublicationJournal} under
 * {@code <state-dir>/publications/<boot id>/}, which is never fsynced. What a publication describes (a bind
 * mount, a read-only loop device) does not survive a reboot, so its record needs to survive a crash of the
 * plugin (the page cache does) and not a crash of the node: after one, the journal of the earlier boot
 * describes nothing that exists and is dropped when the store opens, torn or not (the directory's name says
 * which boot wrote it). This takes the fsyncs and file replacements out of NodePublishVolume and
 * NodeUnpublishVolume (two thirds of their cost on an ordinary disk) without weakening what a node crash
 * leaves: the staging record, which says what is attached and what was formatted, is as durable as before.
 * A caller sees one record: {@link #load} and {@link #all} return the staging record with its publications.
 *
 * <p>What one file holds, and how it is checked, is {@link RecordCodec}'s.
 *
 * <p>The plugin is the only writer of its state directory, so every record is read once, when the store is
 * opened, and then served from memory; the cache is changed only after the rename that made a change
 * visible on disk, so it always equals what a restart would read. A file that cannot be read (corrupt, of a
 * newer format, not a regular file, larger than any record) is remembered and reported, never dropped, and
 * affects its own volume only: {@link #load} of that volume throws an {@link UnreadableRecordException} naming
 * the file and why, {@link #all} lists the records that could be read and {@link #unreadable} the files that
 * could not. Such a file is read again whenever its volume is asked for ({@link #load}) or
 * {@link #recheckUnreadable} runs, so an operator's repair or removal takes effect without a restart. Files are
 * read without following a symlink, without waiting (a FIFO) and only up to {@link #MAX_RECORD_BYTES}
 * ({@link SmallFiles}). A staging file that holds publications (the layout before the journal) is split when
 * the store is opened.
 */
public final class RecordStore {

    /**
     * The format of the records this plugin writes, and the newest it reads. Bumped only when a plugin that
     * knows an older version would misread a record of the new one (a field whose meaning changes, a phase or
     * value it would act on wrongly); a new optional field does not bump it, since protobuf skips the fields it
     * does not know. So a previous minor release reads the records of a newer one with the same version, and a
     * record of a higher version is refused, for its own volume only, with what to do (upgrade again, or tear
     * the volume down with the newer plugin).
     */
    public static final int FORMAT_VERSION = 1;
    /**
     * The largest record file read: a record is a few hundred bytes, thousands of publications (older plugins
     * kept them in the file) stay far below it; a larger file is not a record, and is not read into the heap.
     */
    static final int MAX_RECORD_BYTES = 1 << 20;
    private static final String SUFFIX = ".pb";
    /** Saves of one volume are serialized so that the cache ends up with the record the last rename put. */
    private static final int LOCK_STRIPES = 64;
    private static final Logger LOG = Logger.getLogger(RecordStore.class.getName());
    /**
     * A digest per thread (the call threads, a few), reset by each digest(): looking one up by name on every
     * call cost twice the time and three times the garbage of the hash itself, and a publish asks for it twice.
     */
    private static final ThreadLocal<MessageDigest> SHA_256 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    });

    private final Path directory;
    private final String directoryName;
    private final String bootId;
    /** This boot's publications, under {@code <state-dir>/publications/<boot id>}. */
    private final PublicationJournal journal;
    private final Map<String, StagingRecord> records = new ConcurrentHashMap<>();
    /**
     * Files that could not be read, by file name, with the reason; kept until the volume is saved or deleted, or
     * the file reads again or is gone ({@link #load}, {@link #recheckUnreadable}).
     */
    private final Map<String, UnreadableRecordException> unreadable = new ConcurrentHashMap<>();
    private final ReentrantLock[] locks = new ReentrantLock[LOCK_STRIPES];

    /** A store for this boot of the real kernel. */
    public RecordStore(Path stateDir) throws IOException {
        this(stateDir, BootId.read(HostPaths.real()));
    }

    /** A store whose live publications are those written under {@code bootId} (tests play reboots with it). */
    public RecordStore(Path stateDir, String bootId) throws IOException {
        this.directory = stateDir.resolve("volumes");
        this.directoryName = directory.toString();
        this.bootId = BootId.requireWellFormed(bootId);
        Path publicationsRoot = stateDir.resolve("publications");
        Files.createDirectories(directory);
        Files.createDirectories(publicationsRoot.resolve(bootId));
        for (int i = 0; i < locks.length; i++) {
            locks[i] = new ReentrantLock();
        }
        dropEarlierBoots(publicationsRoot);
        this.journal = PublicationJournal.open(publicationsRoot.resolve(bootId));
        List<String> holdingPublications = loadAll();
        loadPublications();
        movePublicationsOut(holdingPublications);
    }

    public Path directory() {
        return directory;
    }

    /**
     * Saves what the repair loop's sweep left on the node though no record names it, for {@code blocknode status}
     * ({@link KeptLeftovers}); an empty list removes the report.
     */
    public void saveKeptLeftovers(List<String> kept) throws IOException {
        KeptLeftovers.write(directory.getParent(), kept, java.time.Instant.now());
    }

    /** The kernel's boot id this store was opened under: what a record's device numbers are stamped with. */
    public String bootId() {
        return bootId;
    }

    /**
     * What {@link #snapshot} read: the records that could be read, with this boot's publications, and the rest;
     * {@code bootId}, the boot it was read in (a record's device numbers are of the boot it names); {@code kept},
     * what the repair loop's last sweep left on the node though no record names it ({@link KeptLeftovers}).
     */
    public record Snapshot(List<StagingRecord> records, List<UnreadableRecordException> unreadable, String bootId,
                           Optional<KeptLeftovers.Report> kept) {
    }

    /**
     * The records of a state directory as a store opened now would serve them, read without changing anything on
     * disk (what {@code blocknode status} reads, with the plugin running or not): no directory is created, no
     * earlier boot's journal dropped, no publication moved out of an older record, no torn journal tail cut,
     * nothing logged. A state directory without a {@code volumes} directory holds no records.
     *
     * @throws IOException when the state directory cannot be listed, or this boot's journal cannot be read
     */
    public static Snapshot snapshot(Path stateDir, String bootId) throws IOException {
        Path directory = stateDir.resolve("volumes");
        if (!Files.isDirectory(stateDir)) {
            throw new IOException("state directory " + stateDir + " is not a directory (or cannot be read)");
        }
        Map<String, StagingRecord> read = new TreeMap<>();
        Map<String, UnreadableRecordException> unreadable = new TreeMap<>();
        if (Files.isDirectory(directory, LinkOption.NOFOLLOW_LINKS)) {
            try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*" + SUFFIX)) {
                for (Path file : files) {
                    try {
                        read(file).ifPresent(record -> read.put(record.getVolumeId(), record));
                    } catch (UnreadableRecordException e) {
                        unreadable.put(file.getFileName().toString(), e);
                    }
                }
            }
        }
        Map<String, Map<String, PublicationRecord>> publications = PublicationJournal.readOnly(
                stateDir.resolve("publications").resolve(BootId.requireWellFormed(bootId)));
        List<StagingRecord> records = new ArrayList<>();
        for (StagingRecord record : read.values()) {
            records.add(record.toBuilder()
                    .putAllPublications(publications.getOrDefault(record.getVolumeId(), Map.of())).build());
        }
        return new Snapshot(List.copyOf(records), List.copyOf(unreadable.values()), bootId,
                KeptLeftovers.read(stateDir));
    }

    /**
     * The volume's record, if it has one. A file that could not be read is read again first (an operator may
     * have repaired or removed it).
     *
     * @throws UnreadableRecordException when the volume's record file exists but still cannot be read
     */
    public Optional<StagingRecord> load(String volumeId) throws UnreadableRecordException {
        StagingRecord record = records.get(volumeId);
        if (record != null) {
            return Optional.of(record);
        }
        if (unreadable.isEmpty()) {
            return Optional.empty();
        }
        String name = fileNameFor(volumeId);
        if (!unreadable.containsKey(name)) {
            return Optional.empty();
        }
        ReentrantLock lock = lockFor(name);
        lock.lock();
        try {
            if (unreadable.containsKey(name)) {
                readAgain(name);
            }
            UnreadableRecordException still = unreadable.get(name);
            if (still != null) {
                throw still.again();
            }
            return Optional.ofNullable(records.get(volumeId));
        } finally {
            lock.unlock();
        }
    }

    /**
     * Saves the record: its staging part durably when that changed, its publications (not durably, see the
     * class comment) when they changed. A save that changes only publications costs no fsync.
     */
    public void save(StagingRecord record) throws IOException {
        String volumeId = record.getVolumeId();
        String name = fileNameFor(volumeId);
        ReentrantLock lock = lockFor(name);
        lock.lock();
        try {
            StagingRecord cached = records.get(volumeId);
            boolean stagingChanged = cached == null || !stagingPart(cached).equals(stagingPart(record));
            boolean publicationsChanged = cached == null
                    || !cached.getPublicationsMap().equals(record.getPublicationsMap());
            StagingRecord saved;
            if (stagingChanged) {
                saved = record.toBuilder()
                        .setFormatVersion(FORMAT_VERSION)
                        .setUpdatedUnixMillis(System.currentTimeMillis())
                        .build();
                writeStaging(name, saved);
                // The new staging record is what the directory shows from here on, even if what follows fails.
                StagingRecord.Builder shown = saved.toBuilder().clearPublications();
                if (cached != null) {
                    shown.putAllPublications(cached.getPublicationsMap());
                }
                records.put(volumeId, shown.build());
                unreadable.remove(name);
            } else {
                saved = record.toBuilder()
                        .setFormatVersion(cached.getFormatVersion())
                        .setUpdatedUnixMillis(cached.getUpdatedUnixMillis())
                        .build();
            }
            if (publicationsChanged) {
                journal.record(volumeId, saved.getPublicationsMap());
                records.put(volumeId, saved);
            }
            if (stagingChanged) {
                Fsync.path(directoryName);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Saves new publications of a volume whose staging record is saved: what publish and unpublish change,
     * without comparing the rest of the record (one journal write; see the class comment).
     *
     * @throws IOException also when the volume has no staging record: publications are never kept alone
     */
    public void savePublications(String volumeId, Map<String, PublicationRecord> publications) throws IOException {
        ReentrantLock lock = lockFor(fileNameFor(volumeId));
        lock.lock();
        try {
            StagingRecord cached = records.get(volumeId);
            if (cached == null) {
                throw new IOException("volume " + volumeId + " has no staging record to add publications to");
            }
            if (cached.getPublicationsMap().equals(publications)) {
                return;
            }
            journal.record(volumeId, publications);
            records.put(volumeId, cached.toBuilder().clearPublications().putAllPublications(publications).build());
        } finally {
            lock.unlock();
        }
    }

    public void delete(String volumeId) throws IOException {
        String name = fileNameFor(volumeId);
        ReentrantLock lock = lockFor(name);
        lock.lock();
        try {
            journal.record(volumeId, Map.of());
            boolean deleted = Files.deleteIfExists(directory.resolve(name));
            records.remove(volumeId);
            unreadable.remove(name);
            if (deleted) {
                Fsync.path(directoryName);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Every record that could be read. Those that could not are not in it: {@link #unreadable} lists them, and a
     * rule that looks at every record must decide what a record it cannot read means for it.
     */
    public List<StagingRecord> all() {
        return new ArrayList<>(records.values());
    }

    /** The record files that cannot be read, by file name: what is wrong with each, naming the file. */
    public List<UnreadableRecordException> unreadable() {
        return List.copyOf(new TreeMap<>(unreadable).values());
    }

    /**
     * Reads every file that could not be read again: a repaired one is served from here on, a removed one is
     * forgotten (its volume has no record: a NodeUnstageVolume rebuilds one from what is mounted). Cheap when
     * there is none; run before the gauge of unreadable records is read.
     */
    public void recheckUnreadable() {
        for (String name : List.copyOf(unreadable.keySet())) {
            ReentrantLock lock = lockFor(name);
            lock.lock();
            try {
                if (unreadable.containsKey(name)) {
                    readAgain(name);
                }
            } finally {
                lock.unlock();
            }
        }
    }

    Path fileFor(String volumeId) {
        return directory.resolve(fileNameFor(volumeId));
    }

    /** Reads every staging record; returns the volumes whose file still holds publications (older plugins). */
    private List<String> loadAll() throws IOException {
        List<String> holdingPublications = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*" + SUFFIX)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                try {
                    // Empty when removed between the listing and the open: there is nothing to read.
                    Optional<StagingRecord> read = read(file);
                    if (read.isPresent()) {
                        StagingRecord record = read.get();
                        records.put(record.getVolumeId(), record);
                        if (record.getPublicationsCount() > 0) {
                            holdingPublications.add(record.getVolumeId());
                        }
                    }
                } catch (UnreadableRecordException e) {
                    unreadable.put(name, e);
                    LOG.severe(e.getMessage() + "; every call for its volume is refused (FAILED_PRECONDITION) until"
                            + " the file is repaired or removed; the other volumes are not affected");
                }
            }
        }
        return holdingPublications;
    }

    /**
     * One record file, read safely ({@link SmallFiles}: no symlink followed, no wait, at most
     * {@link #MAX_RECORD_BYTES}) and checked (header, checksum, format version, named after its volume); empty
     * when there is no such file.
     */
    private static Optional<StagingRecord> read(Path file) throws UnreadableRecordException {
        Optional<byte[]> bytes;
        try {
            bytes = SmallFiles.readRegularIfPresent(file, MAX_RECORD_BYTES);
        } catch (IOException e) {
            String why = e.getMessage() != null && e.getMessage().startsWith(file.toString()) ? e.getMessage()
                    : file + " cannot be read: " + e.getMessage();
            throw new UnreadableRecordException(file, "staging record " + why, e);
        }
        if (bytes.isEmpty()) {
            return Optional.empty();
        }
        try {
            StagingRecord record = RecordCodec.decode(file, bytes.get());
            requireNamedAfterItsVolume(file, record.getVolumeId());
            return Optional.of(record);
        } catch (IOException e) {
            throw new UnreadableRecordException(file, e.getMessage(), e);
        }
    }

    /**
     * Reads an unreadable file again, with its lock held: a repaired record is served from here on (with this
     * boot's publications of its volume), a removed one forgotten, one still unreadable kept with its reason now.
     */
    private void readAgain(String name) {
        Path file = directory.resolve(name);
        try {
            Optional<StagingRecord> read = read(file);
            unreadable.remove(name);
            if (read.isEmpty()) {
                LOG.warning(() -> "the unreadable staging record " + file + " was removed: its volume has no record"
                        + " now (NodeUnstageVolume rebuilds one from what is mounted)");
                return;
            }
            StagingRecord record = read.get();
            Map<String, PublicationRecord> publications = journal.all().getOrDefault(record.getVolumeId(), Map.of());
            records.put(record.getVolumeId(), record.toBuilder().putAllPublications(publications).build());
            LOG.warning(() -> "staging record " + file + " can be read now: volume " + record.getVolumeId()
                    + " is served from it again");
        } catch (UnreadableRecordException still) {
            unreadable.put(name, still);
        }
    }

    /**
     * Joins this boot's publications to their staging records. Publications whose staging record is gone
     * (an operator removed it) describe a volume this plugin no longer tracks: they are dropped.
     */
    private void loadPublications() throws IOException {
        for (Map.Entry<String, Map<String, PublicationRecord>> volume : journal.all().entrySet()) {
            String volumeId = volume.getKey();
            StagingRecord record = records.get(volumeId);
            if (record != null) {
                records.put(volumeId, record.toBuilder().putAllPublications(volume.getValue()).build());
            } else if (!unreadable.containsKey(fileNameFor(volumeId))) {
                LOG.warning(() -> "dropped the publications of volume " + volumeId + " at " + volume.getValue()
                        .keySet() + ": the volume has no staging record");
                journal.record(volumeId, Map.of());
            }
        }
    }

    /**
     * Publications written before the last reboot describe bind mounts and loop devices that are gone. What
     * cannot be removed (a directory someone made in there, say) is logged and left: it is of no use to anyone,
     * and no reason to stop the plugin.
     */
    private void dropEarlierBoots(Path publicationsRoot) throws IOException {
        List<Path> earlier = new ArrayList<>();
        try (DirectoryStream<Path> boots = Files.newDirectoryStream(publicationsRoot)) {
            for (Path boot : boots) {
                if (!boot.getFileName().toString().equals(bootId) && Files.isDirectory(boot, LinkOption.NOFOLLOW_LINKS)) {
                    earlier.add(boot);
                }
            }
        }
        for (Path boot : earlier) {
            int dropped = 0;
            try {
                try (DirectoryStream<Path> files = Files.newDirectoryStream(boot)) {
                    for (Path file : files) {
                        Files.delete(file);
                        dropped++;
                    }
                }
                Files.delete(boot);
            } catch (IOException e) {
                LOG.warning(() -> "could not remove all of the publications of an earlier boot (" + boot + "), left"
                        + " in place (nothing reads them): " + e);
                continue;
            }
            int count = dropped;
            LOG.info(() -> "dropped " + count + " publication record(s) of an earlier boot (" + boot
                    + "): the mounts they described did not survive the reboot");
        }
    }

    /**
     * Staging records of older plugins hold their publications: they are moved to this boot's publications
     * (they may be live; the plugin that wrote them could not say) and the staging record is rewritten
     * without them. A crash in between leaves both copies, the same publications: harmless, done again.
     */
    private void movePublicationsOut(List<String> volumeIds) throws IOException {
        for (String volumeId : volumeIds) {
            StagingRecord record = records.get(volumeId);
            if (record == null) {
                continue;
            }
            String name = fileNameFor(volumeId);
            journal.record(volumeId, record.getPublicationsMap());
            writeStaging(name, record);
            Fsync.path(directoryName);
            LOG.info(() -> "moved the publications of volume " + volumeId + " out of its staging record");
        }
    }

    /** Writes the staging part of {@code record} (never its publications) durably over the volume's file. */
    private void writeStaging(String name, StagingRecord record) throws IOException {
        RecordFiles.replaceDurably(directory, name, RecordCodec.encode(record.toBuilder().clearPublications().build()));
    }

    /** The record without what a save stamps and without its publications: what the staging file holds. */
    private static StagingRecord stagingPart(StagingRecord record) {
        return record.toBuilder().clearPublications().clearFormatVersion().clearUpdatedUnixMillis().build();
    }

    /** A record under another volume's name would be found by the wrong volume id: refuse it. */
    private static void requireNamedAfterItsVolume(Path file, String volumeId) throws IOException {
        if (!file.getFileName().toString().equals(fileNameFor(volumeId))) {
            throw new IOException("staging record " + file + " holds volume " + volumeId
                    + ", whose record would be " + fileNameFor(volumeId));
        }
    }

    private ReentrantLock lockFor(String fileName) {
        return locks[Math.floorMod(fileName.hashCode(), locks.length)];
    }

    private static String fileNameFor(String volumeId) {
        byte[] digest = SHA_256.get().digest(volumeId.getBytes(StandardCharsets.UTF_8));
        return HexFormat.of().formatHex(digest) + SUFFIX;
    }
}
