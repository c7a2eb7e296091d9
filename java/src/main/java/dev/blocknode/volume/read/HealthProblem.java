package dev.blocknode.volume.read;

import dev.blocknode.transport.PathReport;

import java.util.List;
import java.util.Optional;

/**
 * One adverse condition of a volume as this node sees it. NodeGetVolumeHealth lists each with its kind's
 * severity and reason; the older VolumeCondition of NodeGetVolumeStats joins their messages.
 */
public record HealthProblem(Kind kind, String message) {

    /** How bad it is for the workload: still usable, or not usable from this node. */
    public enum Severity { DEGRADED, INACCESSIBLE }

    /** What is wrong; {@code reason} is the short CamelCase name callers can match on, so it never changes. */
    public enum Kind {
        /** The volume's device has left the node (a LUN unmapped, a loop device detached). */
        DEVICE_MISSING("DeviceMissing", Severity.INACCESSIBLE),
        /** A SAN volume has no path left that serves I/O. */
        NO_PATH_SERVING("NoPathServing", Severity.INACCESSIBLE),
        /** A SAN volume lost some of its paths and runs on the others. */
        PATHS_FAILED("PathsFailed", Severity.DEGRADED),
        /** The block device turned read-only though the volume was staged read-write. */
        DEVICE_READ_ONLY("DeviceReadOnly", Severity.DEGRADED),
        /** The filesystem turned read-only (the kernel's answer to I/O or metadata errors). */
        FILESYSTEM_READ_ONLY("FilesystemReadOnly", Severity.DEGRADED),
        /** The staging mount the record names is not there any more. */
        STAGING_MOUNT_MISSING("StagingMountMissing", Severity.INACCESSIBLE),
        /** A pod's publication of the volume is not mounted where it was published. */
        PUBLICATION_MISSING("PublicationMissing", Severity.INACCESSIBLE),
        /** The volume is not staged: its last NodeStageVolume here failed. */
        STAGE_FAILED("StageFailed", Severity.INACCESSIBLE),
        /** Another node preempted this one's reservation of the LUN: this node's writes fail at the storage. */
        FENCED("Fenced", Severity.INACCESSIBLE),
        /**
         * The volume's staging record cannot be read: this node refuses every call for it (so no new pod gets it
         * here) until an operator repairs or removes the file. What is mounted keeps working: degraded.
         */
        RECORD_UNREADABLE("RecordUnreadable", Severity.DEGRADED);

        private final String reason;
        private final Severity severity;

        Kind(String reason, Severity severity) {
            this.reason = reason;
            this.severity = severity;
        }

        public String reason() {
            return reason;
        }

        public Severity severity() {
            return severity;
        }
    }

    /** What a transport's path report says, if anything is wrong: no path left, or some paths lost. */
    static Optional<HealthProblem> of(PathReport report) {
        if (report.problem().isEmpty()) {
            return Optional.empty();
        }
        Kind kind = report.serving() == 0 ? Kind.NO_PATH_SERVING : Kind.PATHS_FAILED;
        return Optional.of(new HealthProblem(kind, report.problem().get()));
    }

    /** The VolumeCondition message of a list of problems: their messages, in order. */
    static String summary(List<HealthProblem> problems) {
        return String.join("; ", problems.stream().map(HealthProblem::message).toList());
    }
}
