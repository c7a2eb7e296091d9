package dev.blocknode.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Metrics;

/**
 * What the repair loop did to staged volumes' paths, counted by transport, kind and outcome; each also has a log
 * line naming the volume and the paths. A rising {@code wrong_lun} says the storage presents another LUN at a
 * volume's number behind a returned port; a rising {@code failed}, a path that comes back without its LUN.
 */
public final class PathRepairs {

    public static final String NAME = "blocknode_path_repairs";
    /** A SCSI path of a LUN scanned back in and taken into its multipath map. */
    public static final String LUN_PATH = "lun_path";
    /** An iSCSI session of a staged volume's portal that was gone, logged in again (restored) or not (failed). */
    public static final String SESSION = "session";
    /** An NVMe/TCP controller the kernel deleted (after ctrl_loss_tmo), connected again. */
    public static final String CONTROLLER = "controller";
    public static final String RESTORED = "restored";
    public static final String WRONG_LUN = "wrong_lun";
    public static final String FAILED = "failed";

    private PathRepairs() {
    }

    public static void count(String transport, String kind, String outcome, int paths) {
        counter(transport, kind, outcome).increment(paths);
    }

    /** What one repair of a LUN's paths did ({@link #LUN_PATH}), each outcome by its number of paths. */
    public static void countLunPaths(String transport, int restored, int wrongLun, int failed) {
        count(transport, LUN_PATH, RESTORED, restored);
        count(transport, LUN_PATH, WRONG_LUN, wrongLun);
        count(transport, LUN_PATH, FAILED, failed);
    }

    /** The series of a transport that repairs, at 0 from the start, so that a rate over them sees the first one. */
    public static void register(String transport, String kind) {
        for (String outcome : new String[] {RESTORED, WRONG_LUN, FAILED}) {
            counter(transport, kind, outcome);
        }
    }

    private static Counter counter(String transport, String kind, String outcome) {
        return Counter.builder(NAME)
                .description("paths of staged volumes the repair loop worked on, by kind: lun_path (a SCSI path"
                        + " scanned back into its multipath map), session (an iSCSI session that was gone, logged in"
                        + " again), controller (an NVMe/TCP controller deleted by the kernel after ctrl_loss_tmo,"
                        + " connected again); by outcome: restored (back in use), wrong_lun (another LUN answered at"
                        + " the path's address: taken off again, never used), failed (not brought back; tried again"
                        + " after a back-off)")
                .tags("transport", transport, "kind", kind, "outcome", outcome)
                .register(Metrics.globalRegistry);
    }
}
