package dev.blocknode.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * What root in the state directory can write into one of the plugin's proof journals (the iSCSI login journal, the
 * SCSI scan journal): a file named as the journal names its entries (the SHA-256 of its content), so that the
 * journal reads it back as an entry, holding any lines at all. For the tests that prove such an entry is checked field
 * by field and, when it is not what the plugin writes, ignored rather than acted on.
 */
public final class ForgedJournalEntry {

    private ForgedJournalEntry() {
    }

    /** Writes {@code lines} (one a line, none holding a line break) as an entry of the journal in {@code directory}. */
    public static Path write(Path directory, String... lines) throws IOException {
        byte[] content = (String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8);
        Files.createDirectories(directory);
        return Files.write(directory.resolve(sha256(content)), content);
    }

    private static String sha256(byte[] content) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
