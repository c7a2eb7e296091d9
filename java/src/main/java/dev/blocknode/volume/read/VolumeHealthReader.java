package dev.blocknode.volume.read;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.Requests;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * NodeGetVolumeHealth: what is wrong with one volume as this node sees it. A staged volume is read like
 * NodeGetVolumeStats reads it, at the staging path its record names (the request's paths are hints the spec
 * makes optional); a publication the caller names is checked to be still in place. A volume that is not staged
 * is answered from its last failed NodeStageVolume, which is why a pod waits for it; one this node knows
 * nothing of is NOT_FOUND; one whose record cannot be read is that problem. Like stats, no operation guard:
 * this only reads.
 */
public final class VolumeHealthReader {

    private final KubeletPaths paths;
    private final StagingRecords records;
    private final VolumeStatsReader stats;
    private final RecentStageFailures failures;
    private final FencedVolumes fences;

    public VolumeHealthReader(KubeletPaths paths, StagingRecords records, VolumeStatsReader stats,
                       RecentStageFailures failures, FencedVolumes fences) {
        this.paths = paths;
        this.records = records;
        this.stats = stats;
        this.failures = failures;
        this.fences = fences;
    }

    public List<HealthProblem> read(Requests.Health request) throws VolumeException {
        String volumeId = request.volumeId();
        Optional<StagingRecord> record;
        try {
            record = records.find(volumeId);
        } catch (VolumeException refused) {
            if (StagingRecords.isUnreadable(refused)) {
                return List.of(new HealthProblem(HealthProblem.Kind.RECORD_UNREADABLE, refused.getMessage()));
            }
            throw refused;
        }
        if (record.isEmpty() || record.get().getPhase() != StagePhase.STAGED) {
            Optional<RecentStageFailures.Failure> failure = failures.of(volumeId);
            if (failure.isPresent()) {
                return List.of(stageFailed(volumeId, failure.get()));
            }
            if (record.isEmpty()) {
                throw VolumeException.notFound("volume " + volumeId + " is not staged on this node, and no"
                        + " NodeStageVolume of it failed here recently");
            }
            // A stage under way, or one interrupted that kubelet will retry: nothing known to be wrong yet.
            return List.of();
        }
        List<HealthProblem> problems = new ArrayList<>(staged(volumeId, record.get().getStagingPath()));
        fences.problem(volumeId).ifPresent(fenced -> problems.add(0, fenced));
        if (!request.publishPath().isEmpty()) {
            Path publication = paths.confine("volume_publish_path", request.publishPath());
            if (record.get().containsPublications(publication.toString())
                    && !mountedAt(volumeId, publication.toString())) {
                problems.add(new HealthProblem(HealthProblem.Kind.PUBLICATION_MISSING, "volume " + volumeId
                        + " is no longer mounted at its publication " + publication));
            }
        }
        return problems;
    }

    private List<HealthProblem> staged(String volumeId, String staging) throws VolumeException {
        try {
            return stats.read(new Requests.Stats(volumeId, staging, "")).problems();
        } catch (VolumeException missing) {
            if (missing.outcome() != VolumeException.Outcome.NOT_FOUND) {
                throw missing;
            }
            return List.of(new HealthProblem(HealthProblem.Kind.STAGING_MOUNT_MISSING, missing.getMessage()));
        }
    }

    private boolean mountedAt(String volumeId, String publication) throws VolumeException {
        try {
            stats.read(new Requests.Stats(volumeId, publication, ""));
            return true;
        } catch (VolumeException missing) {
            if (missing.outcome() != VolumeException.Outcome.NOT_FOUND) {
                throw missing;
            }
            return false;
        }
    }

    private static HealthProblem stageFailed(String volumeId, RecentStageFailures.Failure failure) {
        return new HealthProblem(HealthProblem.Kind.STAGE_FAILED, "the last NodeStageVolume of volume " + volumeId
                + " on this node failed at " + failure.at() + " (" + failure.outcome() + "): " + failure.message());
    }
}
