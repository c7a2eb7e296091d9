package dev.blocknode.transport;

import dev.blocknode.multipath.PathHealth;

import java.util.List;
import java.util.Optional;

/**
 * How a volume's paths serve I/O, as its transport reads them: how many serve, what is wrong with each of the
 * others, and the VolumeCondition message (empty when every path serves). The volume layer sees only this,
 * never the multipath types it is read from.
 */
public record PathReport(int serving, List<String> failures, Optional<String> problem) {

    public PathReport {
        failures = List.copyOf(failures);
    }

    /** What the shared SCSI/multipath code found for a SAN transport's LUN. */
    public static PathReport of(PathHealth.Report report) {
        return new PathReport(report.serving(), report.failures(), report.problem());
    }

    public int failed() {
        return failures.size();
    }
}
