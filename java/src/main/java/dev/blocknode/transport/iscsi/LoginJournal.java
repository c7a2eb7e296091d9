package dev.blocknode.transport.iscsi;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
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
import java.util.logging.Logger;

/**
 * blocknode's own proof that it made a node record and logged in: one small file per target, portal and iface under
 * {@code <state-dir>/iscsi-logins/}, written and fsynced BEFORE {@code iscsiadm -o new}, removed once the session is
 * logged out and its record deleted. The orphan sweep ({@link OrphanSessionSweep}) touches only what an entry names:
 * a session an administrator made, or one of a blocknode older than the journal, has no entry and is never swept,
 * whatever its name looks like. An entry outlives a crash anywhere between its write and the logout, which is what
 * the sweep needs; one left over after its session is gone costs nothing (the sweep removes it).
 *
 * <p>A file's name is the SHA-256 of what it holds (an IQN can be 223 bytes, too long for a name), and it holds the
 * target, portal and iface on three lines. A file that does not read back as such proves nothing and is left alone.
 */
public final class LoginJournal {

    private static final Logger LOG = Logger.getLogger(LoginJournal.class.getName());
    public static final String DIRECTORY = "iscsi-logins";
    /** Far above three lines of an IQN, a portal and an iface name: a larger file is not an entry. */
    private static final long MAX_ENTRY = 4096;

    /** A journal that records nothing and proves nothing (tools that never log in: pv, status). */
    public static final LoginJournal NONE = new LoginJournal(null);

    private final Path directory;

    private LoginJournal(Path directory) {
        this.directory = directory;
    }

    /** The journal under the plugin's state directory. */
    public static LoginJournal in(Path stateDir) {
        return new LoginJournal(stateDir.resolve(DIRECTORY));
    }

    /** Records, durably, that blocknode is about to make the record of {@code path} and log in to it. */
    public void record(IscsiPath path) throws IOException {
        if (directory == null) {
            return;
        }
        Files.createDirectories(directory);
        Path entry = directory.resolve(nameOf(path));
        if (readEntry(entry).filter(path::equals).isPresent()) {
            return; // a login of this path recorded earlier, still not undone
        }
        Path temp = directory.resolve("." + entry.getFileName() + ".tmp");
        try (FileChannel out = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            out.write(ByteBuffer.wrap(contentOf(path).getBytes(StandardCharsets.UTF_8)));
            out.force(true);
        }
        Files.move(temp, entry, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory();
    }

    /** Forgets {@code path}: its session is logged out and its record deleted (or neither ever existed). */
    public void forget(IscsiPath path) throws IOException {
        if (directory == null) {
            return;
        }
        if (Files.deleteIfExists(directory.resolve(nameOf(path)))) {
            syncDirectory();
        }
    }

    /** The paths blocknode has proof of having logged in to and not yet logged out of. */
    public List<IscsiPath> all() throws IOException {
        List<IscsiPath> paths = new ArrayList<>();
        if (directory == null || !Files.isDirectory(directory)) {
            return paths;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory, p -> !p.getFileName().toString()
                .startsWith("."))) {
            for (Path entry : entries) {
                Optional<IscsiPath> path = readEntry(entry);
                if (path.isPresent() && entry.getFileName().toString().equals(nameOf(path.get()))) {
                    paths.add(path.get());
                } else {
                    LOG.warning(() -> "iSCSI login journal: " + entry + " is not an entry of this plugin; it proves"
                            + " nothing and is left alone");
                }
            }
        }
        return paths;
    }

    private static Optional<IscsiPath> readEntry(Path entry) throws IOException {
        try {
            if (!Files.isRegularFile(entry, java.nio.file.LinkOption.NOFOLLOW_LINKS) || Files.size(entry) > MAX_ENTRY) {
                return Optional.empty();
            }
            List<String> lines = Files.readAllLines(entry, StandardCharsets.UTF_8);
            if (lines.size() != 3) {
                return Optional.empty();
            }
            return Optional.of(new IscsiPath(lines.get(0), Portal.parse(lines.get(1)), lines.get(2)));
        } catch (NoSuchFileException gone) {
            return Optional.empty();
        } catch (IllegalArgumentException | java.nio.charset.CharacterCodingException notAnEntry) {
            return Optional.empty();
        }
    }

    private static String contentOf(IscsiPath path) {
        return path.iqn() + "\n" + path.portal() + "\n" + path.iface() + "\n";
    }

    static String nameOf(IscsiPath path) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(contentOf(path).getBytes(StandardCharsets.UTF_8)));
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
