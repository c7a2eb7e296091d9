package dev.blocknode.state;

import dev.blocknode.os.SmallFiles;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What the repair loop's last sweep left on the node though no staging record names it (what, where, why: one line
 * each, as the transports said it), in {@code <state-dir>/sweep-kept}: written by the plugin when the list changes,
 * removed when it empties, and read by {@code blocknode status}, which does not need the plugin running. The first
 * line says when it was written: after a plugin stop, it is what the last sweep found.
 */
public final class KeptLeftovers {

    static final String FILE = "sweep-kept";
    /** Far above any list (a line per leftover): a larger file is not ours and is not read into the heap. */
    static final int MAX_BYTES = 1 << 20;
    private static final String AT = "at ";

    /** What the file says: when it was written, and the leftovers, one per line. */
    public record Report(Instant at, List<String> kept) {

        public Report {
            kept = List.copyOf(kept);
        }
    }

    private KeptLeftovers() {
    }

    /** Replaces the file with {@code kept} (atomically: a reader sees the old list or the new), or removes it. */
    static void write(Path stateDir, List<String> kept, Instant at) throws IOException {
        if (kept.isEmpty()) {
            Files.deleteIfExists(stateDir.resolve(FILE));
            return;
        }
        StringBuilder text = new StringBuilder(AT).append(at).append('\n');
        for (String thing : kept) {
            // One leftover per line: a line break inside one (an error message's) would split it.
            text.append(thing.replace('\n', ' ').replace('\r', ' ')).append('\n');
        }
        RecordFiles.replaceDurably(stateDir, FILE, text.toString().getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The file's report; empty when there is none (nothing kept, or no sweep yet).
     *
     * @throws IOException when it cannot be read, or is not such a report
     */
    public static Optional<Report> read(Path stateDir) throws IOException {
        Path file = stateDir.resolve(FILE);
        Optional<byte[]> bytes = SmallFiles.readRegularIfPresent(file, MAX_BYTES);
        if (bytes.isEmpty()) {
            return Optional.empty();
        }
        List<String> lines = new String(bytes.get(), StandardCharsets.UTF_8).lines().toList();
        if (lines.isEmpty() || !lines.getFirst().startsWith(AT)) {
            throw new IOException(file + " is not a report of the sweep's leftovers (no \"at\" line first)");
        }
        Instant at;
        try {
            at = Instant.parse(lines.getFirst().substring(AT.length()));
        } catch (DateTimeParseException e) {
            throw new IOException(file + " is not a report of the sweep's leftovers: " + e.getMessage(), e);
        }
        return Optional.of(new Report(at, new ArrayList<>(lines.subList(1, lines.size()))));
    }
}
