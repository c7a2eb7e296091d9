package dev.blocknode.doctor;

import dev.blocknode.os.SmallFiles;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The host's configuration and kernel files the checks read: small text, absent being an answer too. Read through
 * {@link SmallFiles}, links followed (a distribution may link /etc/multipath.conf), so that a FIFO, a device or a
 * huge file at such a name is a finding's IOException, never a doctor that waits for ever.
 */
final class HostFiles {

    /** Far above any configuration file or modules list the checks read. */
    static final int MAX_BYTES = 16 << 20;

    private HostFiles() {
    }

    /** The file's text; empty when there is no such file. */
    static Optional<String> read(Path file) throws IOException {
        return SmallFiles.readRegularFollowingLinks(file, MAX_BYTES).map(b -> new String(b, StandardCharsets.UTF_8));
    }
}
