package dev.blocknode.transport;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What one repair of a staged volume's paths did ({@link PathRepair#repair}): the paths it brought back into
 * use, the devices it found at a path's address that were another LUN (taken off again, never used), the paths it
 * tried and could not bring back, and, when it did nothing on purpose, why (every path down: it waits and
 * reports). Each entry names the path (an address, a device) and never carries caller input beyond the volume id.
 * A path brought back under a new device name changes what the staging record must say (path health and release
 * read the names): {@code attachment} is then the attachment's details from now on.
 */
public record RepairedPaths(List<String> restored, List<String> wrongLun, List<String> failed,
                         Optional<String> waiting, Optional<Map<String, String>> attachment) {

    /** Nothing to repair: every expected path is in use, or the transport repairs nothing. */
    public static final RepairedPaths NONE = new RepairedPaths(List.of(), List.of(), List.of(), Optional.empty(),
            Optional.empty());

    public RepairedPaths {
        restored = List.copyOf(restored);
        wrongLun = List.copyOf(wrongLun);
        failed = List.copyOf(failed);
        attachment = attachment.map(Map::copyOf);
    }

    /** What was tried, with nothing for the record. */
    public RepairedPaths(List<String> restored, List<String> wrongLun, List<String> failed) {
        this(restored, wrongLun, failed, Optional.empty(), Optional.empty());
    }

    /** Nothing done on purpose: {@code why} says what the repair waits for. */
    public static RepairedPaths waiting(String why) {
        return new RepairedPaths(List.of(), List.of(), List.of(), Optional.of(why), Optional.empty());
    }

    /** Whether a path was tried and not brought back: what the repair loop backs off after. */
    public boolean failedAny() {
        return !wrongLun.isEmpty() || !failed.isEmpty();
    }

    /** Whether the repair did or tried anything (a log line and a count each). */
    public boolean actedOn() {
        return !restored.isEmpty() || failedAny();
    }
}
