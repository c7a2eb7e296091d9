package dev.blocknode.transport;

import dev.blocknode.os.SmallFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * blocknode's durable proof that it made something on the node, as one small file per thing in a directory of the
 * state directory: written and fsynced (file, then directory) BEFORE the thing is made, removed only once it is undone.
 * A sweep then touches only what an entry names, never what merely looks like blocknode's. The iSCSI login journal
 * and the SCSI scan journal are two such directories, each giving its entries' lines their meaning.
 *
 * <p>A file holds its entry's lines, one a line, and its name is the SHA-256 of those bytes (an IQN can be 223 bytes,
 * too long for a name); a file that does not read back as such (another name, too large, not a regular file, not
 * UTF-8) proves nothing and is left alone, with a warning.
 */
public final class ProofJournal {

    private static final Logger LOG = Logger.getLogger(ProofJournal.class.getName());
    /** Far above a few lines of IQNs, portals and numbers: a larger file is not an entry. */
    private static final int MAX_ENTRY = 4096;

    private final Path directory;
    private final String what;

    /**
     * @param directory where the entries live; null for a journal that records nothing and proves nothing (tools
     *                  that never make anything: pv, status)
     * @param what      the journal's name for a log line ("iSCSI login journal")
     */
    public ProofJournal(Path directory, String what) {
        this.directory = directory;
        this.what = what;
    }

    /** Records, durably, the entry of lines {@code lines} (none of them holding a line break). */
    public void record(List<String> lines) throws IOException {
        if (directory == null) {
            return;
        }
        Files.createDirectories(directory);
        Path entry = directory.resolve(nameOf(lines));
        if (read(entry).filter(lines::equals).isPresent()) {
            return; // recorded earlier, still not undone
        }
        Path temp = directory.resolve("." + entry.getFileName() + ".tmp");
        try (FileChannel out = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            out.write(ByteBuffer.wrap(contentOf(lines).getBytes(StandardCharsets.UTF_8)));
            out.force(true);
        }
        Files.move(temp, entry, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory();
    }

    /** Removes the entry of {@code lines}: what it proved is undone (or never happened). */
    public void forget(List<String> lines) throws IOException {
        if (directory == null) {
            return;
        }
        if (Files.deleteIfExists(directory.resolve(nameOf(lines)))) {
            syncDirectory();
        }
    }

    /** Every entry's lines; a file that is not an entry is named in a warning and left alone. */
    public List<List<String>> all() throws IOException {
        List<List<String>> all = new ArrayList<>();
        if (directory == null || !Files.isDirectory(directory)) {
            return all;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory, p -> !p.getFileName().toString()
                .startsWith("."))) {
            for (Path entry : entries) {
                Optional<List<String>> lines = read(entry);
                if (lines.isPresent() && entry.getFileName().toString().equals(nameOf(lines.get()))) {
                    all.add(lines.get());
                } else {
                    notAnEntry(entry);
                }
            }
        }
        return all;
    }

    /** For a journal whose lines of a well-named file do not make one of its entries. */
    public void notAnEntry(Object entry) {
        LOG.warning(() -> what + ": " + entry + " is not an entry of this plugin; it proves nothing and is left alone");
    }

    /**
     * An entry's lines, read through {@link SmallFiles} (no symlink followed, never waiting on a FIFO, at most
     * {@link #MAX_ENTRY} bytes); empty for anything that cannot be an entry, which proves nothing.
     */
    private static Optional<List<String>> read(Path entry) {
        try {
            Optional<byte[]> bytes = SmallFiles.readRegularIfPresent(entry, MAX_ENTRY);
            if (bytes.isEmpty()) {
                return Optional.empty();
            }
            return Optional.of(StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes.get())).toString()
                    .lines().toList());
        } catch (IOException notAnEntry) { // not a regular file, too large, not UTF-8, or unreadable
            return Optional.empty();
        }
    }

    private static String contentOf(List<String> lines) {
        StringBuilder content = new StringBuilder();
        for (String line : lines) {
            if (line.indexOf('\n') >= 0 || line.indexOf('\r') >= 0) {
                throw new IllegalArgumentException("a journal line holds a line break");
            }
            content.append(line).append('\n');
        }
        return content.toString();
    }

    /** The file name of an entry: the SHA-256 of its content, in hex. */
    public static String nameOf(List<String> lines) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(contentOf(lines).getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    private void syncDirectory() throws IOException {
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            dir.force(true);
        }
    }
}
