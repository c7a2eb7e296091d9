package dev.blocknode.state;

import com.google.protobuf.UnknownFieldSet;
import dev.blocknode.state.v1.BlockAccessRecord;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RecordStoreUnitTest {

    @TempDir
    Path stateDir;

    private static StagingRecord mountRecord(String volumeId) {
        return StagingRecord.newBuilder()
                .setVolumeId(volumeId)
                .setPhase(StagePhase.STAGED)
                .setTransport("local")
                .setStagingPath("/var/lib/kubelet/plugins/kubernetes.io/csi/block.csi.blocknode.dev/abc/globalmount")
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/loop4").setMajor(7).setMinor(4)
                        .setIdentity("naa.600140512345"))
                .setMount(MountAccessRecord.newBuilder().setFsType("ext4").addMountFlags("noatime")
                        .addMountFlags("data=ordered").setFormattedHere(true))
                .setAccessMode("SINGLE_NODE_WRITER")
                .putAttachment("devicePath", "/dev/disk/by-id/wwn-0x6001")
                .putAttachment("note", "quote \" and newline \n and unicode \u00e9")
                .putPublications("/var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pv/mount",
                        PublicationRecord.newBuilder().setReadonly(true).addMountFlags("nosuid")
                                .setAccessMode("SINGLE_NODE_READER_ONLY").build())
                .putPublications("/var/lib/kubelet/pods/p2/volumes/kubernetes.io~csi/pv/mount",
                        PublicationRecord.newBuilder().setReadonly(false).setAccessMode("SINGLE_NODE_WRITER").build())
                .build();
    }

    private static String sha256(String id) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                .digest(id.getBytes(StandardCharsets.UTF_8)));
    }

    private Set<String> filesInStore() throws IOException {
        try (Stream<Path> files = Files.list(stateDir.resolve("volumes"))) {
            return files.map(p -> p.getFileName().toString()).collect(Collectors.toSet());
        }
    }

    @Test
    void constructorCreatesTheVolumesDirectory() throws IOException {
        Path nested = stateDir.resolve("a/b");
        RecordStore store = new RecordStore(nested);
        assertEquals(nested.resolve("volumes"), store.directory());
        assertTrue(Files.isDirectory(nested.resolve("volumes")));
        // and opening it again is fine
        new RecordStore(nested);
    }

    @Test
    void roundTripOfAMountRecordStampsVersionAndTime() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        StagingRecord record = mountRecord("vol-1");
        long before = System.currentTimeMillis();
        store.save(record);
        long after = System.currentTimeMillis();

        StagingRecord loaded = store.load("vol-1").orElseThrow();
        assertEquals(RecordStore.FORMAT_VERSION, loaded.getFormatVersion());
        assertEquals(1, loaded.getFormatVersion());
        assertTrue(loaded.getUpdatedUnixMillis() >= before && loaded.getUpdatedUnixMillis() <= after,
                "updated " + loaded.getUpdatedUnixMillis() + " not in [" + before + ", " + after + "]");
        assertEquals(record, loaded.toBuilder().clearFormatVersion().clearUpdatedUnixMillis().build());
        assertTrue(loaded.hasMount());
        assertFalse(loaded.hasBlock());
        assertEquals(StagingRecord.AccessCase.MOUNT, loaded.getAccessCase());
        assertEquals(2, loaded.getPublicationsCount());
        assertTrue(loaded.getPublicationsOrThrow("/var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pv/mount")
                .getReadonly());
        assertEquals(List.of("noatime", "data=ordered"), loaded.getMount().getMountFlagsList());
        assertEquals("quote \" and newline \n and unicode \u00e9", loaded.getAttachmentOrThrow("note"));
    }

    @Test
    void roundTripOfABlockRecord() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        StagingRecord record = StagingRecord.newBuilder()
                .setVolumeId("raw-1")
                .setPhase(StagePhase.STAGING)
                .setTransport("local")
                .setBlock(BlockAccessRecord.getDefaultInstance())
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/loop9").setMajor(7).setMinor(9))
                .build();
        store.save(record);
        StagingRecord loaded = store.load("raw-1").orElseThrow();
        assertTrue(loaded.hasBlock());
        assertFalse(loaded.hasMount());
        assertEquals(StagingRecord.AccessCase.BLOCK, loaded.getAccessCase());
        assertEquals(StagePhase.STAGING, loaded.getPhase());
        assertEquals(0, loaded.getPublicationsCount());
    }

    @Test
    void saveOverridesAnyFormatVersionInTheRecord() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("v").toBuilder().setFormatVersion(99).setUpdatedUnixMillis(5).build());
        StagingRecord loaded = store.load("v").orElseThrow();
        assertEquals(RecordStore.FORMAT_VERSION, loaded.getFormatVersion());
        assertTrue(loaded.getUpdatedUnixMillis() > 5);
    }

    @Test
    void theFileIsAChecksummedBinaryRecord() throws Exception {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("vol-bin"));
        byte[] bytes = Files.readAllBytes(store.directory().resolve(sha256("vol-bin") + ".pb"));
        assertEquals("bnr1", new String(bytes, 0, 4, StandardCharsets.US_ASCII));
        StagingRecord parsed = StagingRecord.parseFrom(Arrays.copyOfRange(bytes, 8, bytes.length));
        assertEquals(store.load("vol-bin").orElseThrow().toBuilder().clearPublications().build(), parsed,
                "the staging file holds the record without its publications");
        CRC32C crc = new CRC32C();
        crc.update(bytes, 8, bytes.length - 8);
        assertEquals((int) crc.getValue(), ByteBuffer.wrap(bytes, 4, 4).getInt());
    }

    @Test
    void aReopenedStoreReadsWhatWasSaved() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("a"));
        store.save(mountRecord("b").toBuilder().setPhase(StagePhase.UNSTAGING).build());
        store.save(mountRecord("gone"));
        store.delete("gone");
        RecordStore reopened = new RecordStore(stateDir);
        assertEquals(store.load("a"), reopened.load("a"));
        assertEquals(StagePhase.UNSTAGING, reopened.load("b").orElseThrow().getPhase());
        assertEquals(Optional.empty(), reopened.load("gone"));
        assertEquals(Set.of("a", "b"), ids(reopened.all()));
    }

    @Test
    void aFailedWriteChangesNeitherTheFileNorTheCache() throws Exception {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("v"));
        StagingRecord before = store.load("v").orElseThrow();
        // A directory where the temp file must go makes the write fail before anything is renamed.
        Path blocker = store.directory().resolve(sha256("v") + ".pb.tmp");
        Files.createDirectories(blocker.resolve("inside"));
        assertThrows(IOException.class, () -> store.save(mountRecord("v").toBuilder()
                .setPhase(StagePhase.UNSTAGING).build()));
        assertEquals(before, store.load("v").orElseThrow());
        assertEquals(before, new RecordStore(stateDir).load("v").orElseThrow());
    }

    @Test
    void loadOfAnUnknownIdIsEmpty() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        assertEquals(Optional.empty(), store.load("never-saved"));
        store.save(mountRecord("other"));
        assertEquals(Optional.empty(), store.load("never-saved"));
    }

    @Test
    void filesAreNamedBySha256OfTheId() throws Exception {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("vol-1"));
        assertEquals(Set.of(sha256("vol-1") + ".pb"), filesInStore());
        assertEquals(store.directory().resolve(sha256("vol-1") + ".pb"), store.fileFor("vol-1"));
        assertEquals(
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.pb",
                store.fileFor("").getFileName().toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"a/b/c", "../../../etc/passwd", "..", ".", "/", "", "vol\\with\\backslashes",
            "\u30dc\u30ea\u30e5\u30fc\u30e0-\ud83d\ude00", "spaces and\ttabs\nnewline", "%2F..%2F"})
    void anyIdRoundTripsInsideTheStore(String id) throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord(id));
        assertEquals(id, store.load(id).orElseThrow().getVolumeId());
        assertEquals(Set.of(sha256(id) + ".pb"), filesInStore());
        // nothing was written outside the volumes directory and this boot's publications directory
        try (Stream<Path> all = Files.walk(stateDir)) {
            assertEquals(Set.of(stateDir, stateDir.resolve("volumes"), store.directory().resolve(sha256(id) + ".pb"),
                    stateDir.resolve("publications"), journal(BOOT).getParent(), journal(BOOT)),
                    all.collect(Collectors.toSet()));
        }
    }

    @Test
    void idOf1000CharactersWorks() throws Exception {
        RecordStore store = new RecordStore(stateDir);
        String id = "v".repeat(999) + "\u00e9";
        store.save(mountRecord(id));
        assertEquals(id, store.load(id).orElseThrow().getVolumeId());
        assertEquals(64 + ".pb".length(), store.fileFor(id).getFileName().toString().length());
    }

    @Test
    void similarIdsDoNotCollide() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("vol").toBuilder().setTransport("a").build());
        store.save(mountRecord("VOL").toBuilder().setTransport("b").build());
        store.save(mountRecord("vol ").toBuilder().setTransport("c").build());
        assertEquals("a", store.load("vol").orElseThrow().getTransport());
        assertEquals("b", store.load("VOL").orElseThrow().getTransport());
        assertEquals("c", store.load("vol ").orElseThrow().getTransport());
        assertEquals(3, filesInStore().size());
    }

    @Test
    void deleteRemovesOnlyThatRecord() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("keep"));
        store.save(mountRecord("drop"));
        store.delete("drop");
        assertEquals(Optional.empty(), store.load("drop"));
        assertTrue(store.load("keep").isPresent());
        assertEquals(1, filesInStore().size());
    }

    @Test
    void deleteOfAnAbsentRecordIsHarmless() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.delete("never-saved");
        store.save(mountRecord("v"));
        store.delete("v");
        store.delete("v");
        assertEquals(Set.of(), filesInStore());
    }

    @Test
    void allReturnsEveryRecord() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        assertEquals(List.of(), store.all());
        store.save(mountRecord("a"));
        store.save(mountRecord("b/../c"));
        store.save(mountRecord("\u00e9"));
        Set<String> ids = store.all().stream().map(StagingRecord::getVolumeId).collect(Collectors.toSet());
        assertEquals(Set.of("a", "b/../c", "\u00e9"), ids);
    }

    @Test
    void allIgnoresLeftoverTempFilesAndOtherNames() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("a"));
        Files.writeString(store.directory().resolve(store.fileFor("b").getFileName() + ".tmp"), "torn write {");
        Files.writeString(store.directory().resolve("README"), "not a record");
        assertEquals(List.of("a"), new RecordStore(stateDir).all().stream().map(StagingRecord::getVolumeId).toList());
    }

    @Test
    void overwriteReplacesTheRecordAndLeavesNoTempFile() throws Exception {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("v").toBuilder().setPhase(StagePhase.STAGING).build());
        store.save(mountRecord("v").toBuilder().setPhase(StagePhase.STAGED).clearPublications().build());
        StagingRecord loaded = store.load("v").orElseThrow();
        assertEquals(StagePhase.STAGED, loaded.getPhase());
        assertEquals(0, loaded.getPublicationsCount());
        assertEquals(Set.of(sha256("v") + ".pb"), filesInStore());
    }

    @Test
    void aStaleTempFileFromACrashIsOverwritten() throws Exception {
        RecordStore store = new RecordStore(stateDir);
        Path temp = store.directory().resolve(sha256("v") + ".pb.tmp");
        Files.writeString(temp, "volume_id: \"garbage that is much longer than the real record will be ".repeat(50));
        store.save(mountRecord("v"));
        assertEquals(mountRecord("v"), store.load("v").orElseThrow().toBuilder()
                .clearFormatVersion().clearUpdatedUnixMillis().build());
        assertFalse(Files.exists(temp));
    }

    @Test
    void aCorruptFileIsReportedByLoadAndAllNamingTheFile() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("fine"));
        Path file = store.fileFor("broken");
        Files.writeString(file, "volume_id: \"broken\"\nphase: {{{ not a record");
        RecordStore reopened = new RecordStore(stateDir);
        IOException e = assertThrows(IOException.class, () -> reopened.load("broken"));
        assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("corrupt"), e.getMessage());
        assertEquals(Set.of("fine"), ids(reopened.all()), "the others are served; the bad one is not dropped:");
        assertEquals(List.of(file), reopened.unreadable().stream().map(UnreadableRecordException::file).toList());
        assertTrue(reopened.unreadable().getFirst().getMessage().contains("corrupt"));
        assertTrue(reopened.load("fine").isPresent());
    }

    @Test
    void aFlippedBitIsCorrupt() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("f"));
        Path file = store.fileFor("f");
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length / 2] ^= 0x10;
        Files.write(file, bytes);
        IOException e = assertThrows(IOException.class, () -> new RecordStore(stateDir).load("f"));
        assertTrue(e.getMessage().contains("checksum"), e.getMessage());
    }

    @Test
    void aTruncatedFileIsCorrupt() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("t"));
        Path file = store.fileFor("t");
        byte[] bytes = Files.readAllBytes(file);
        for (int cut : new int[] {0, 3, 8, bytes.length / 2, bytes.length - 1}) {
            Files.write(file, Arrays.copyOf(bytes, cut));
            IOException e = assertThrows(IOException.class, () -> new RecordStore(stateDir).load("t"), "cut " + cut);
            assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
        }
    }

    @Test
    void savingOrDeletingTheVolumeReplacesACorruptFile() throws IOException {
        new RecordStore(stateDir);
        Files.writeString(new RecordStore(stateDir).fileFor("x"), "garbage");
        Files.writeString(new RecordStore(stateDir).fileFor("y"), "garbage");
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("x"));
        store.delete("y");
        assertEquals("x", store.load("x").orElseThrow().getVolumeId());
        assertEquals(Optional.empty(), store.load("y"));
        assertEquals(Set.of("x"), ids(store.all()));
    }

    @Test
    void aRecordUnderAnotherVolumesNameIsRefused() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("a"));
        Files.move(store.fileFor("a"), store.fileFor("b"));
        RecordStore reopened = new RecordStore(stateDir);
        assertEquals(Optional.empty(), reopened.load("a"));
        IOException e = assertThrows(IOException.class, () -> reopened.load("b"));
        assertTrue(e.getMessage().contains("holds volume a"), e.getMessage());
    }

    @Test
    void aNewerFormatVersionIsRefused() throws IOException {
        RecordStore store = new RecordStore(stateDir);
        Path file = store.fileFor("future");
        Files.write(file, RecordCodec.encode(mountRecord("future").toBuilder().setFormatVersion(2).build()));
        RecordStore reopened = new RecordStore(stateDir);
        UnreadableRecordException e = assertThrows(UnreadableRecordException.class, () -> reopened.load("future"));
        assertTrue(e.getMessage().contains("format version 2"), e.getMessage());
        assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("written by a newer blocknode"), e.getMessage());
        assertTrue(e.getMessage().contains("upgrade the plugin again, or tear the volume down with the newer plugin"),
                e.getMessage());
        assertEquals(List.of(), reopened.all());
        assertEquals(1, reopened.unreadable().size());
    }

    /**
     * The rollback promise, the other way: a newer minor release adds an optional field and keeps the format
     * version (see FORMAT_VERSION); this plugin reads its record, and keeps the field it does not know.
     */
    @Test
    void aRecordOfTheSameVersionWithAFieldThisPluginDoesNotKnowIsRead() throws Exception {
        Path volumes = Files.createDirectories(stateDir.resolve("volumes"));
        StagingRecord newer = mountRecord("newer").toBuilder().setFormatVersion(RecordStore.FORMAT_VERSION)
                .setUnknownFields(UnknownFieldSet.newBuilder().addField(4242, UnknownFieldSet.Field.newBuilder()
                        .addLengthDelimited(com.google.protobuf.ByteString.copyFromUtf8("from 1.x+1")).build())
                        .build()).build();
        Files.write(volumes.resolve(sha256("newer") + ".pb"), RecordCodec.encode(newer));
        RecordStore store = new RecordStore(stateDir);
        StagingRecord read = store.load("newer").orElseThrow();
        assertEquals(RecordStore.FORMAT_VERSION, read.getFormatVersion());
        assertEquals("/dev/loop4", read.getDevice().getPath());
        assertTrue(read.getUnknownFields().hasField(4242));
        assertEquals(List.of(), store.unreadable());
    }

    @Test
    void aFifoASymlinkADirectoryAndAHugeFileNamedLikeRecordsAreUnreadableAtOnce() throws Exception {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("good"));
        Path fifo = store.fileFor("fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        Path zero = Files.createSymbolicLink(store.fileFor("zero"), Path.of("/dev/zero"));
        Path directory = Files.createDirectory(store.fileFor("dir"));
        Path huge = store.fileFor("huge");
        try (var out = Files.newByteChannel(huge, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            out.position(RecordStore.MAX_RECORD_BYTES).write(ByteBuffer.wrap(new byte[] {1})); // sparse
        }
        long started = System.nanoTime();
        RecordStore reopened = new RecordStore(stateDir); // Files.readAllBytes waited for the FIFO's writer for ever
        assertTrue(System.nanoTime() - started < 10_000_000_000L, "the store opens at once");
        assertEquals(Set.of("good"), ids(reopened.all()));
        assertEquals(4, reopened.unreadable().size());
        assertTrue(message(reopened, "fifo").contains(fifo + " is a FIFO, not a regular file"));
        assertTrue(message(reopened, "zero").contains(zero + " is a symbolic link"), message(reopened, "zero"));
        assertTrue(message(reopened, "dir").contains(directory + " is a directory"));
        assertTrue(message(reopened, "huge").contains(huge + " is larger than " + RecordStore.MAX_RECORD_BYTES),
                message(reopened, "huge"));
        assertTrue(Files.isSymbolicLink(zero) && Files.exists(fifo), "reported, never dropped");
    }

    @Test
    void anUnreadableRecordThatIsRepairedOrRemovedIsReadAgainWithoutARestart() throws Exception {
        RecordStore store = new RecordStore(stateDir);
        store.save(mountRecord("repaired"));
        store.save(mountRecord("removed"));
        byte[] good = Files.readAllBytes(store.fileFor("repaired"));
        Files.write(store.fileFor("repaired"), Arrays.copyOf(good, good.length - 3));
        Files.write(store.fileFor("removed"), new byte[] {1, 2, 3});
        RecordStore reopened = new RecordStore(stateDir);
        assertThrows(UnreadableRecordException.class, () -> reopened.load("repaired"));
        assertEquals(2, reopened.unreadable().size());

        Files.write(store.fileFor("repaired"), good);
        assertEquals("repaired", reopened.load("repaired").orElseThrow().getVolumeId());
        Files.delete(store.fileFor("removed"));
        reopened.recheckUnreadable();
        assertEquals(List.of(), reopened.unreadable());
        assertEquals(Optional.empty(), reopened.load("removed"));
        assertEquals(Set.of("repaired"), ids(reopened.all()));
    }

    @Test
    void aJournalThatIsNotARegularFileOrIsHugeIsRefusedAtOnceNamingIt() throws Exception {
        Path journal = journal(BOOT);
        Files.createDirectories(journal.getParent());
        Files.createSymbolicLink(journal, Path.of("/dev/zero")); // every publication would have gone into it
        IOException link = assertThrows(IOException.class, () -> new RecordStore(stateDir, BOOT));
        assertTrue(link.getMessage().contains(journal.toString()), link.getMessage());
        Files.delete(journal);
        assertEquals(0, new ProcessBuilder("mkfifo", journal.toString()).start().waitFor());
        IOException fifo = assertThrows(IOException.class, () -> new RecordStore(stateDir, BOOT));
        assertTrue(fifo.getMessage().contains("journal " + journal + " is not a regular file"), fifo.getMessage());
        Files.delete(journal);
        try (var out = Files.newByteChannel(journal, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            out.position(PublicationJournal.MAX_JOURNAL_BYTES).write(ByteBuffer.wrap(new byte[] {1})); // sparse
        }
        IOException huge = assertThrows(IOException.class, () -> new RecordStore(stateDir, BOOT));
        assertTrue(huge.getMessage().contains("more than the " + PublicationJournal.MAX_JOURNAL_BYTES),
                huge.getMessage());
        Files.delete(journal);
        new RecordStore(stateDir, BOOT).save(mountRecord("v")); // and without them, all is well
    }

    /**
     * A FIFO planted anywhere in the state directory never keeps the store from opening (the plugin's
     * start): one in an earlier boot's publications is removed unopened, one at the sweep's report is never read by
     * the plugin, and neither is waited on.
     */
    @Test
    void aFifoPlantedElsewhereInTheStateDirNeitherHangsNorStopsTheOpening() throws Exception {
        new RecordStore(stateDir, BOOT).save(mountRecord("v"));
        Path earlier = Files.createDirectories(stateDir.resolve("publications").resolve(NEXT_BOOT));
        for (Path fifo : List.of(earlier.resolve("journal"), stateDir.resolve("sweep-kept"))) {
            assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        }
        RecordStore store = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> new RecordStore(stateDir, BOOT));
        assertEquals("v", store.load("v").orElseThrow().getVolumeId());
        assertFalse(Files.exists(earlier), "an earlier boot's publications are dropped, FIFO and all");
        IOException kept = assertThrows(IOException.class, () -> assertTimeoutPreemptively(Duration.ofSeconds(20),
                () -> RecordStore.snapshot(stateDir, BOOT)));
        assertTrue(kept.getMessage().contains(stateDir.resolve("sweep-kept") + " is a FIFO, not a regular file"),
                kept.getMessage());
    }

    @Test
    void anEarlierBootThatCannotBeRemovedIsLeftAndTheStoreOpens() throws Exception {
        new RecordStore(stateDir, BOOT).save(mountRecord("v"));
        Files.writeString(Files.createDirectories(stateDir.resolve("publications").resolve(BOOT).resolve("x"))
                .resolve("y"), "a directory with a file in it: Files.delete refuses it");
        RecordStore next = new RecordStore(stateDir, NEXT_BOOT); // threw DirectoryNotEmptyException
        assertEquals("v", next.load("v").orElseThrow().getVolumeId());
    }

    @Test
    void aSymlinkNamedLikeATempFileIsNeverWrittenThrough() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        Path victim = Files.writeString(stateDir.resolve("victim"), "keep me");
        Files.createSymbolicLink(Path.of(store.fileFor("v") + ".tmp"), victim);
        store.save(mountRecord("v"));
        assertEquals("keep me", Files.readString(victim));
        assertEquals("v", new RecordStore(stateDir, BOOT).load("v").orElseThrow().getVolumeId());
    }

    private static String message(RecordStore store, String volumeId) {
        UnreadableRecordException e = assertThrows(UnreadableRecordException.class, () -> store.load(volumeId));
        return e.getMessage();
    }

    @Test
    void unknownFieldsFromANewerWriterAreTolerated() throws Exception {
        Path volumes = Files.createDirectories(stateDir.resolve("volumes"));
        StagingRecord loaded = mountRecord("v");
        // a field number this plugin does not know survives a read (protobuf keeps unknown fields)
        byte[] withUnknown = loaded.toBuilder().setUnknownFields(UnknownFieldSet.newBuilder()
                .addField(99, UnknownFieldSet.Field.newBuilder().addVarint(42).build()).build()).build().toByteArray();
        Files.write(volumes.resolve(sha256("n") + ".pb"), RecordCodec.encode(StagingRecord.parseFrom(withUnknown)
                .toBuilder().setVolumeId("n").build()));
        assertEquals("n", new RecordStore(stateDir).load("n").orElseThrow().getVolumeId());
    }

    private static Set<String> ids(List<StagingRecord> records) {
        return records.stream().map(StagingRecord::getVolumeId).collect(Collectors.toSet());
    }

    // --- publications: a journal per boot, never fsynced ---

    private static final String BOOT = "0c6e1d2a-1111-4f00-8000-000000000001";
    private static final String NEXT_BOOT = "0c6e1d2a-2222-4f00-8000-000000000002";

    private Path journal(String boot) {
        return stateDir.resolve("publications").resolve(boot).resolve("journal");
    }

    private static StagingRecord stagingFile(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        return StagingRecord.parseFrom(Arrays.copyOfRange(bytes, 8, bytes.length));
    }

    private static StagingRecord withPublication(StagingRecord record, String target) {
        return record.toBuilder().putPublications(target, PublicationRecord.newBuilder()
                .setAccessMode("SINGLE_NODE_MULTI_WRITER").build()).build();
    }

    @Test
    void publicationsAreJournaledUnderTheBootIdAndNotInTheStagingFile() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("v"));
        assertTrue(Files.size(journal(BOOT)) > 0);
        assertEquals(0, stagingFile(store.directory().resolve(sha256("v") + ".pb")).getPublicationsCount());
        assertEquals(mountRecord("v").getPublicationsMap(),
                new RecordStore(stateDir, BOOT).load("v").orElseThrow().getPublicationsMap());
    }

    @Test
    void aSaveThatChangesOnlyPublicationsLeavesTheStagingFileAlone() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("v"));
        Path staging = store.directory().resolve(sha256("v") + ".pb");
        byte[] before = Files.readAllBytes(staging);
        Object inode = Files.readAttributes(staging, BasicFileAttributes.class).fileKey();
        StagingRecord saved = store.load("v").orElseThrow();

        store.save(withPublication(saved, "/t/new"));

        assertTrue(Arrays.equals(before, Files.readAllBytes(staging)), "the staging file is unchanged");
        assertEquals(inode, Files.readAttributes(staging, BasicFileAttributes.class).fileKey(), "and not replaced");
        StagingRecord loaded = store.load("v").orElseThrow();
        assertEquals(3, loaded.getPublicationsCount());
        assertEquals(saved.getUpdatedUnixMillis(), loaded.getUpdatedUnixMillis(),
                "the time is that of the last change to the staging record");
        assertEquals(loaded, new RecordStore(stateDir, BOOT).load("v").orElseThrow(), "a restart reads the same");
    }

    @Test
    void theLastChangeOfEachVolumeWinsAfterARestart() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("a"));
        store.save(mountRecord("b"));
        store.save(store.load("a").orElseThrow().toBuilder().clearPublications().build());
        store.save(withPublication(store.load("b").orElseThrow(), "/t/b3"));
        store.save(withPublication(store.load("a").orElseThrow(), "/t/a1"));

        RecordStore reopened = new RecordStore(stateDir, BOOT);

        assertEquals(Set.of("/t/a1"), reopened.load("a").orElseThrow().getPublicationsMap().keySet());
        assertEquals(3, reopened.load("b").orElseThrow().getPublicationsCount());
        assertEquals(store.load("b"), reopened.load("b"));
    }

    @Test
    void afterARebootThePublicationsOfTheEarlierBootAreDroppedAndTheStagingRecordKept() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("v"));
        StagingRecord before = store.load("v").orElseThrow();

        RecordStore rebooted = new RecordStore(stateDir, NEXT_BOOT);

        assertEquals(before.toBuilder().clearPublications().build(), rebooted.load("v").orElseThrow());
        assertFalse(Files.exists(stateDir.resolve("publications").resolve(BOOT)), "the earlier boot's are gone");
        assertTrue(Files.exists(journal(NEXT_BOOT)));
    }

    @Test
    void aGarbledJournalOfAnEarlierBootIsDroppedNotReported() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("v"));
        // what a node crash can leave of a file that was never fsynced: anything, here zeros and noise
        Files.write(journal(BOOT), new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 42, 17, 0, 0, 0});

        RecordStore rebooted = new RecordStore(stateDir, NEXT_BOOT);

        assertEquals(0, rebooted.load("v").orElseThrow().getPublicationsCount());
        assertEquals(Set.of("v"), ids(rebooted.all()));
    }

    @Test
    void aWriteCutShortIsCutOffAndTheEntriesBeforeItKept() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("v"));
        long complete = Files.size(journal(BOOT));
        store.save(withPublication(store.load("v").orElseThrow(), "/t/lost"));
        long longer = Files.size(journal(BOOT));
        try (var channel = java.nio.channels.FileChannel.open(journal(BOOT), StandardOpenOption.WRITE)) {
            channel.truncate(complete + (longer - complete) / 2); // a kill between two pages of the write
        }

        RecordStore reopened = new RecordStore(stateDir, BOOT);

        assertEquals(mountRecord("v").getPublicationsMap(), reopened.load("v").orElseThrow().getPublicationsMap());
        assertEquals(complete, Files.size(journal(BOOT)), "the partial entry is cut off");
        reopened.save(withPublication(reopened.load("v").orElseThrow(), "/t/again"));
        assertEquals(3, new RecordStore(stateDir, BOOT).load("v").orElseThrow().getPublicationsCount(),
                "what is appended after the cut is read");
    }

    @Test
    void publicationsWithoutAStagingRecordAreDropped() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("v"));
        Files.delete(store.directory().resolve(sha256("v") + ".pb"));

        RecordStore reopened = new RecordStore(stateDir, BOOT);
        assertEquals(Optional.empty(), reopened.load("v"));
        reopened.save(mountRecord("v").toBuilder().clearPublications().build());
        assertEquals(0, new RecordStore(stateDir, BOOT).load("v").orElseThrow().getPublicationsCount(),
                "the dropped publications do not come back with a new staging record");
    }

    @Test
    void aStagingRecordOfAnOlderPluginHoldingPublicationsIsSplitOnOpen() throws Exception {
        Path volumes = Files.createDirectories(stateDir.resolve("volumes"));
        StagingRecord old = mountRecord("old").toBuilder().setFormatVersion(1).setUpdatedUnixMillis(77).build();
        Files.write(volumes.resolve(sha256("old") + ".pb"), RecordCodec.encode(old));

        RecordStore store = new RecordStore(stateDir, BOOT);

        assertEquals(old, store.load("old").orElseThrow());
        assertEquals(0, stagingFile(volumes.resolve(sha256("old") + ".pb")).getPublicationsCount());
        assertEquals(old, new RecordStore(stateDir, BOOT).load("old").orElseThrow());
    }

    @Test
    void deleteRemovesThePublicationsToo() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("v"));
        store.delete("v");
        store.save(mountRecord("v").toBuilder().clearPublications().build());
        assertEquals(0, new RecordStore(stateDir, BOOT).load("v").orElseThrow().getPublicationsCount());
    }

    @Test
    void theJournalIsCompactedAndStaysSmall() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        StagingRecord staged = mountRecord("v").toBuilder().clearPublications().build();
        store.save(staged);
        store.save(mountRecord("w"));
        for (int i = 0; i < 5_000; i++) {
            store.save(withPublication(staged, "/var/lib/kubelet/pods/pod-" + i + "/volumes/kubernetes.io~csi/pv/mount"));
            store.save(staged);
        }
        assertTrue(Files.size(journal(BOOT)) < 300 << 10, "compacted: " + Files.size(journal(BOOT)) + " bytes");
        RecordStore reopened = new RecordStore(stateDir, BOOT);
        assertEquals(0, reopened.load("v").orElseThrow().getPublicationsCount());
        assertEquals(store.load("w"), reopened.load("w"));
        try (Stream<Path> files = Files.list(journal(BOOT).getParent())) {
            assertEquals(List.of(journal(BOOT)), files.toList(), "no temp file left");
        }
    }

    @Test
    void aBootIdThatIsNotAUuidIsRefused() {
        assertThrows(IOException.class, () -> new RecordStore(stateDir, "../../etc"));
    }

    @Test
    void savePublicationsChangesOnlyThePublicationsAndNeedsAStagingRecord() throws Exception {
        RecordStore store = new RecordStore(stateDir, BOOT);
        store.save(mountRecord("v"));
        StagingRecord before = store.load("v").orElseThrow();

        store.savePublications("v", withPublication(before, "/t/x").getPublicationsMap());

        StagingRecord after = store.load("v").orElseThrow();
        assertEquals(before.toBuilder().clearPublications().build(), after.toBuilder().clearPublications().build());
        assertEquals(3, after.getPublicationsCount());
        assertEquals(after, new RecordStore(stateDir, BOOT).load("v").orElseThrow());
        IOException e = assertThrows(IOException.class, () -> store.savePublications("nobody",
                mountRecord("nobody").getPublicationsMap()));
        assertTrue(e.getMessage().contains("no staging record"), e.getMessage());
        assertEquals(Optional.empty(), new RecordStore(stateDir, BOOT).load("nobody"));
    }

    @Test
    void aSnapshotReadsWhatAStoreWouldServeAndChangesNothing() throws Exception {
        String boot = "0c6e1d2a-1111-4f00-8000-000000000009";
        RecordStore store = new RecordStore(stateDir, boot);
        store.save(mountRecord("current"));                                  // publications in this boot's journal
        Path volumes = stateDir.resolve("volumes");
        // What a store would change on opening: an older record holding its publications, an earlier boot's
        // journal, a torn tail on this boot's, a file that is no record.
        Files.write(volumes.resolve(sha256("older") + ".pb"), RecordCodec.encode(mountRecord("older")));
        Path earlier = Files.createDirectories(stateDir.resolve("publications/0c6e1d2a-1111-4f00-8000-00000000000e"));
        Files.writeString(earlier.resolve("journal"), "stale");
        try (Stream<Path> journal = Files.list(stateDir.resolve("publications").resolve(boot))) {
            Files.write(journal.findFirst().orElseThrow(), new byte[]{9, 9}, java.nio.file.StandardOpenOption.APPEND);
        }
        Files.writeString(volumes.resolve(sha256("broken") + ".pb"), "not a record");
        Map<String, String> before = new java.util.TreeMap<>();
        try (Stream<Path> all = Files.walk(stateDir)) {
            for (Path path : all.toList()) {
                before.put(path.toString(), Files.size(path) + " " + Files.getLastModifiedTime(path).toMillis());
            }
        }

        RecordStore.Snapshot snapshot = RecordStore.snapshot(stateDir, boot);

        assertEquals(List.of("current", "older"), snapshot.records().stream().map(StagingRecord::getVolumeId).toList());
        for (StagingRecord record : snapshot.records()) {
            assertEquals(mountRecord("x").getPublicationsMap(), record.getPublicationsMap(), record.getVolumeId());
        }
        assertEquals(List.of(volumes.resolve(sha256("broken") + ".pb")),
                snapshot.unreadable().stream().map(UnreadableRecordException::file).toList());
        Map<String, String> after = new java.util.TreeMap<>();
        try (Stream<Path> all = Files.walk(stateDir)) {
            for (Path path : all.toList()) {
                after.put(path.toString(), Files.size(path) + " " + Files.getLastModifiedTime(path).toMillis());
            }
        }
        assertEquals(before, after);
        assertThrows(IOException.class, () -> RecordStore.snapshot(stateDir.resolve("absent"), boot));
        assertFalse(Files.exists(stateDir.resolve("absent")));
    }
}
