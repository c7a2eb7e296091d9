package dev.blocknode.transport.iscsi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Writes CHAP settings straight into open-iscsi's node record file, so that secrets never appear in any
 * process's argv (iscsiadm -o update -v would put them there, readable in /proc by anyone on the node).
 * iscsiadm reads the record at login. The file is rewritten atomically and readable by root only.
 *
 * <p>Layout (open-iscsi 2.x, measured in the VM tier): a record made with {@code -o new} is the flat file
 * {@code <db>/nodes/<iqn>/<address>,<port>}; one made by discovery is
 * {@code <db>/nodes/<iqn>/<address>,<port>,<tpgt>/<iface>}.
 */
public final class NodeRecordFiles {

    /**
     * What makes a record manual: nothing logs it in by itself ({@code node.startup}, and the record's per-connection
     * {@code node.conn[0].startup}, which an automatic login at boot also reads), and a login scans no LUN
     * ({@code node.session.scan}): the plugin scans exactly the volume's LUN. Written with the login's other settings
     * in one write of the record file, where two {@code iscsiadm -o update} runs cost two process starts and two
     * walks of the database per portal (a quarter of the stage's iscsiadm runs).
     */
    public static final Map<String, String> MANUAL = Map.of("node.startup", "manual",
            "node.conn[0].startup", "manual", "node.session.scan", "manual");

    private final Path database;

    /** @param database open-iscsi's database directory ({@code HostPaths.iscsiDatabase()}) */
    public NodeRecordFiles(Path database) {
        this.database = database;
    }

    /** Replaces the given settings in the record of {@code path} (lines for those keys are removed first). */
    public void writeSettings(IscsiPath path, Map<String, String> settings) throws IOException {
        Path record = find(path).orElseThrow(() -> new IOException("no node record for " + path + " under "
                + database.resolve("nodes")));
        List<String> kept = new ArrayList<>();
        for (String line : Files.readAllLines(record, StandardCharsets.UTF_8)) {
            if (!settings.containsKey(keyOf(line))) {
                kept.add(line);
            }
        }
        settings.forEach((key, value) -> kept.add(key + " = " + value));
        // Where the new file is written matters: iscsiadm walks every entry under nodes/ while it looks for
        // a record. In the target's directory it passes over names without a comma (a portal is
        // "<address>,<port>[,<tpgt>]"); a temporary file named after the record was taken for a portal and
        // failed the walk (exit 6), and one in a portal's directory would be read as an interface's record. The
        // target's directory is also on the record's filesystem, as the rename needs (nodes/ may be a mount
        // of its own).
        Path temp = Files.createTempFile(database.resolve("nodes").resolve(path.iqn()), ".blocknode-record-", ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Files.write(temp, kept, StandardCharsets.UTF_8);
            Files.move(temp, record, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(temp);
        }
    }

    /** The value of one setting in the record, if the record and the setting exist. */
    public Optional<String> readSetting(IscsiPath path, String key) throws IOException {
        Optional<Path> record = find(path);
        if (record.isEmpty()) {
            return Optional.empty();
        }
        for (String line : Files.readAllLines(record.get(), StandardCharsets.UTF_8)) {
            if (key.equals(keyOf(line))) {
                return Optional.of(line.substring(line.indexOf('=') + 1).strip());
            }
        }
        return Optional.empty();
    }

    Optional<Path> find(IscsiPath path) throws IOException {
        Path target = database.resolve("nodes").resolve(path.iqn());
        if (!Files.isDirectory(target)) {
            return Optional.empty();
        }
        // "<address>,<port>,<tpgt>" from discovery; "<address>,<port>" for a record made with -o new.
        String exact = path.portal().address() + "," + path.portal().port();
        try (DirectoryStream<Path> portals = Files.newDirectoryStream(target, p -> {
            String name = p.getFileName().toString();
            return name.equals(exact) || name.startsWith(exact + ",");
        })) {
            for (Path portal : portals) {
                if (Files.isRegularFile(portal)) {
                    return Optional.of(portal);
                }
                Path record = portal.resolve(path.iface());
                if (Files.isRegularFile(record)) {
                    return Optional.of(record);
                }
            }
        } catch (NoSuchFileException targetGone) {
            // iscsiadm removes the target's directory with its last record: another portal's unstage deleted it
            // between the look above and this listing (figure l's drain of N volumes of one target met it).
        }
        return Optional.empty();
    }

    private static String keyOf(String line) {
        int eq = line.indexOf('=');
        return eq < 0 ? "" : line.substring(0, eq).strip();
    }
}
