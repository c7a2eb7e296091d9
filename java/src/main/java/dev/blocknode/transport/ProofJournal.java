package dev.blocknode.transport;

import dev.blocknode.logging.Printable;
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
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;

/**
 * blocknode's durable proof that it made something on the node, as one small file per thing in a directory of the
 * state directory: written and fsynced (file, then directory) BEFORE the thing is made, removed only once it is undone.
 * A sweep then touches only what an entry names, never what merely looks like blocknode's. The iSCSI login journal
 * and the SCSI scan journal are two such directories, each giving its entries' lines their meaning.
 *
 * <p>A file holds its entry's lines, one a line, and its name is the SHA-256 of those bytes (an IQN can be 223 bytes,
 * too long for a name); a file that does not read back as such (another name, too large, not a regular file, not
 * UTF-8) proves nothing and is left alone, with a warning. So is an entry whose lines the journal's owner finds are
 * not what it writes ({@link #notAnEntry}): an entry is read back as untrusted input (root in the state directory can
 * forge one), and each of its fields is checked by its format before it is joined into a path, handed to a command or
 * matched against sysfs. Each such file is warned of once, not on every pass of the sweep that reads the journal.
 */
public final class ProofJournal {

    private static final Logger LOG = Logger.getLogger(ProofJournal.class.getName());
    /** Far above a few lines of IQNs, portals and numbers: a larger file is not an entry. */
    private static final int MAX_ENTRY = 4096;

    private final Path directory;
    private final String what;
    /** The files already warned of, by name: each is named once while it stays (the sweep reads every pass). */
    private final Set<String> warned = ConcurrentHashMap.newKeySet();

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
        Set<String> present = new HashSet<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory, p -> !p.getFileName().toString()
                .startsWith("."))) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                present.add(name);
                Optional<List<String>> lines = read(entry);
                if (lines.isPresent() && name.equals(nameOf(lines.get()))) {
                    all.add(lines.get());
                } else {
                    warnOnce(name, "not a file this plugin wrote");
                }
            }
        }
        warned.retainAll(present); // a file removed and made again is warned of again
        return all;
    }

    /**
     * For a journal whose owner finds that the lines of a well-named file are not one of its entries ({@code why}:
     * which field is not what it writes): the entry is ignored, never acted on, and named in one warning.
     */
    public void notAnEntry(List<String> lines, String why) {
        warnOnce(nameOf(lines), why);
    }

    private void warnOnce(String name, String why) {
        if (warned.add(name)) {
            // Both may quote a forged value: escaped and bounded here, whatever the log's formatter does.
            String file = Printable.bounded(name, 80);
            String reason = Printable.bounded(why, 200);
            LOG.warning(() -> what + ": " + file + " is not an entry of this plugin (" + reason + "); it proves"
                    + " nothing and is ignored");
        }
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
