package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.UnreadableRecordException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.record.RecordedBoot;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;

/**
 * At start, compares the staging records with what is really on the node and reports every difference.
 * It changes nothing itself: what it finds is logged and counted, so an operator sees after a reboot or
 * crash which volumes wait for kubelet and which records look stale. The records of calls that died in
 * an attach or a teardown ({@link Report#interrupted}), and those of staged volumes with publications
 * ({@link Report#published}, some of whose pods may be gone), are handed to {@link StartupRecovery}.
 */
public final class StartupCheck {

    private static final Logger LOG = Logger.getLogger(StartupCheck.class.getName());

    /**
     * What was found: records by state, one line per finding, the records left ATTACHING or UNSTAGING (a subset
     * of the half-done ones), which StartupRecovery finishes, and the STAGED records with a recorded
     * publication, whose publications of pods that are gone StartupRecovery retires. {@code unreadable} counts
     * the record files that cannot be read (each named in a finding; not in {@code records}): their volumes
     * are refused until the file is repaired or removed, and nothing is recovered for them.
     */
    public record Report(int records, int healthy, int halfDone, int stale, List<String> findings,
                         List<StagingRecord> interrupted, List<StagingRecord> published, int unreadable) {
    }

    private final Host host;
    private final RecordStore store;

    public StartupCheck(Host host, RecordStore store) {
        this.host = host;
        this.store = store;
    }

    public Report run() {
        List<String> findings = new ArrayList<>();
        List<StagingRecord> records = store.all();
        List<UnreadableRecordException> unreadable = store.unreadable();
        for (UnreadableRecordException record : unreadable) {
            findings.add(unreadableFinding(record));
        }
        int healthy = 0;
        int halfDone = 0;
        int stale = 0;
        List<StagingRecord> interrupted = new ArrayList<>();
        List<StagingRecord> published = new ArrayList<>();
        for (StagingRecord record : records) {
            if (record.getPhase() != StagePhase.STAGED) {
                halfDone++;
                findings.add(halfDoneFinding(record));
                if (record.getPhase() == StagePhase.ATTACHING || record.getPhase() == StagePhase.UNSTAGING) {
                    interrupted.add(record);
                }
                continue;
            }
            if (record.getPublicationsCount() > 0) {
                published.add(record);
            }
            String problem = problemWith(record);
            if (problem.isEmpty()) {
                healthy++;
            } else {
                stale++;
                findings.add("volume " + record.getVolumeId() + " is recorded as staged but " + problem
                        + "; it will be staged again or torn down when kubelet asks");
            }
        }
        Report report = new Report(records.size(), healthy, halfDone, stale, List.copyOf(findings),
                List.copyOf(interrupted), List.copyOf(published), unreadable.size());
        log(report);
        return report;
    }

    private static String unreadableFinding(UnreadableRecordException record) {
        return record.getMessage() + "; its volume is refused (FAILED_PRECONDITION) until the file is repaired or"
                + " removed, nothing is recovered for it, and a fencing reservation it may hold is not renewed";
    }

    /** What a record an interrupted call left (not STAGED) means, and what becomes of it. */
    private static String halfDoneFinding(StagingRecord record) {
        String volume = record.getVolumeId();
        return switch (record.getPhase()) {
            case ATTACHING -> "volume " + volume + " was left ATTACHING by an interrupted call: the "
                    + record.getTransport() + " transport may have attached part of its device; undoing that"
                    + " attach (kubelet's retry attaches anew)";
            case UNSTAGING -> "volume " + volume + " was left UNSTAGING by an interrupted call: finishing the"
                    + " teardown kubelet asked for";
            default -> "volume " + volume + " was left " + record.getPhase()
                    + " by an interrupted call; kubelet's retry will finish or undo it";
        };
    }

    private static void log(Report report) {
        for (String finding : report.findings()) {
            LOG.warning(finding);
        }
        LOG.info("startup check: " + report.records() + " staged volume record(s): " + report.healthy()
                + " in place, " + report.halfDone() + " half-done, " + report.stale() + " stale"
                + (report.unreadable() == 0 ? "" : "; " + report.unreadable() + " record file(s) cannot be read"));
    }

    private String problemWith(StagingRecord record) {
        if (RecordedBoot.of(record, store.bootId()) == RecordedBoot.EARLIER_BOOT) {
            // The numbers are of that boot: whatever has them now proves nothing about the volume.
            return "was staged in an earlier boot of the node (its device numbers are of that boot)";
        }
        DeviceNumber number = StagingRecords.deviceNumber(record);
        if (!host.blockDevices().exists(number)) {
            return "its device " + record.getDevice().getPath() + " (" + number + ") is not on the node";
        }
        DeviceNumber used = StagingRecords.usedNumber(record);
        if (!used.equals(number) && !host.blockDevices().exists(used)) {
            return "its dm-crypt mapping " + record.getCrypt().getMappingName() + " (" + used + ") is not open";
        }
        if (record.hasMount()) {
            Path staging = Path.of(record.getStagingPath());
            try {
                if (!Files.exists(staging, LinkOption.NOFOLLOW_LINKS) || !host.mounter().isMountPoint(staging)
                        || !host.mounter().stat(staging).device().equals(used)) {
                    return "its staging path " + staging + " does not hold its filesystem";
                }
            } catch (IOException e) {
                return "its staging path " + staging + " cannot be inspected (" + e.getMessage() + ")";
            }
        }
        return "";
    }
}
