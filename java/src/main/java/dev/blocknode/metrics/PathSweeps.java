package dev.blocknode.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Metrics;

/**
 * What the repair loop's sweep removed that no staging record needed any more, by transport, kind and outcome; each
 * removal is also one log line naming it. A rising {@code failed} says a leftover blocknode made could not be
 * removed (the log says why); it is tried again on the next pass.
 */
public final class PathSweeps {

    public static final String NAME = "blocknode_path_sweeps";
    /** An iSCSI session blocknode logged in to that no record names and that carries no disk, logged out. */
    public static final String SESSION = "session";
    /** The node record of such a session (or one whose session was already gone), deleted. */
    public static final String NODE_RECORD = "node_record";
    /** A SCSI disk of a LUN blocknode scanned in that no record names and nothing mounts or holds, deleted. */
    public static final String DISK = "disk";
    /** The multipath map over such disks alone, opened by nobody, flushed and removed. */
    public static final String MAP = "map";
    public static final String REMOVED = "removed";
    public static final String FAILED = "failed";

    private PathSweeps() {
    }

    public static void count(String transport, String kind, String outcome) {
        counter(transport, kind, outcome).increment();
    }

    /** The series of a transport that sweeps, at 0 from the start, so that a rate over them sees the first one. */
    public static void register(String transport, String kind) {
        counter(transport, kind, REMOVED);
        counter(transport, kind, FAILED);
    }

    private static Counter counter(String transport, String kind, String outcome) {
        return Counter.builder(NAME)
                .description("leftovers the repair loop's sweep removed because no staging record names them and"
                        + " blocknode's own journal proves it made them, by kind: session (an iSCSI session that"
                        + " carried no disk, logged out), node_record (its iSCSI node record, deleted), disk (a SCSI"
                        + " disk of a LUN blocknode scanned in that nothing mounts or holds, deleted), map (the"
                        + " multipath map over"
                        + " such disks alone, opened by nobody, flushed); by outcome:"
                        + " removed, failed (left; tried again on the next pass)")
                .tags("transport", transport, "kind", kind, "outcome", outcome)
                .register(Metrics.globalRegistry);
    }
}
