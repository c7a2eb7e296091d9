package dev.blocknode.transport.iscsi;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.SmallFiles;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The node's iSCSI initiator name (its IQN) as open-iscsi keeps it: the {@code InitiatorName=} line of
 * /etc/iscsi/initiatorname.iscsi, which iscsid reads at its start and every login presents to the target.
 */
public final class InitiatorName {

    /** The file is one line and a comment; anything near this size is not open-iscsi's. */
    private static final int MAX_BYTES = 64 * 1024;
    private static final String KEY = "InitiatorName=";

    private InitiatorName() {
    }

    /** The IQN, or empty when the file is missing or names none (open-iscsi not set up on this node). */
    public static Optional<String> read(HostPaths paths) throws IOException {
        Optional<byte[]> bytes = SmallFiles.readRegularIfPresent(paths.iscsiInitiatorName(), MAX_BYTES);
        if (bytes.isEmpty()) {
            return Optional.empty();
        }
        return parse(new String(bytes.get(), StandardCharsets.UTF_8));
    }

    static Optional<String> parse(String text) {
        for (String line : text.lines().map(String::strip).toList()) {
            if (line.startsWith(KEY) && line.length() > KEY.length()) {
                return Optional.of(line.substring(KEY.length()).strip());
            }
        }
        return Optional.empty();
    }
}
