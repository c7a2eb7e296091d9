package dev.blocknode.transport.nvme;

import dev.blocknode.os.SmallFiles;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Who this node is to an NVMe subsystem: its host NQN (what the array's access lists name) and its host ID.
 * Both come from the files every NVMe host tool reads and writes, /etc/nvme/hostnqn and /etc/nvme/hostid, so a
 * node known to the array through nvme-cli is the same host to blocknode; a volume may override them. The
 * same pair is passed on every connection: a subsystem takes two different IDs for one NQN as two hosts.
 */
record HostIdentity(String hostNqn, Optional<String> hostId) {

    public static final Path DEFAULT_DIRECTORY = Path.of("/etc/nvme");
    /** Far above an NQN (at most 223 bytes) or a UUID. */
    private static final int MAX_BYTES = 4096;

    /** The node's own identity from {@code directory}; empty parts where a file is missing or blank. */
    static Configured configured(Path directory) throws IOException {
        return new Configured(read(directory.resolve("hostnqn")), read(directory.resolve("hostid")));
    }

    /** What the node's files say, unchecked: a request's keys may replace either. */
    record Configured(Optional<String> hostNqn, Optional<String> hostId) {
    }

    private static Optional<String> read(Path file) throws IOException {
        // A FIFO or a device at the name is refused at once, never waited on (SmallFiles).
        return SmallFiles.readRegularFollowingLinks(file, MAX_BYTES)
                .map(bytes -> new String(bytes, StandardCharsets.UTF_8).strip()).filter(value -> !value.isEmpty());
    }
}
