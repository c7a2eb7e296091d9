package dev.blocknode.volume.read;

import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.record.RecordedBoot;

import java.time.Instant;
import java.util.Optional;

/**
 * One problem of a volume as {@code blocknode status} shows it ({@link NodeStatusReader}): a reason of
 * {@link HealthProblem.Kind} or one of status's own, how bad it is, what is wrong, and the next step an operator
 * takes ({@link NextSteps}).
 */
public record StatusProblem(String reason, HealthProblem.Severity severity, String message, String next) {

    /** A record in ATTACHING or STAGING: a NodeStageVolume that has not finished ({@link #unfinished}). */
    public static final String STAGE_INCOMPLETE = "StageIncomplete";
    /** A record in UNSTAGING: a NodeUnstageVolume that has not finished. */
    public static final String UNSTAGE_INCOMPLETE = "UnstageIncomplete";

    static StatusProblem of(HealthProblem problem, String next) {
        return new StatusProblem(problem.kind().reason(), problem.kind().severity(), problem.message(), next);
    }

    static StatusProblem of(HealthProblem.Kind kind, String message, String next) {
        return of(new HealthProblem(kind, message), next);
    }

    /**
     * The problem of a record in any phase but STAGED: a stage or unstage that has not finished, since when its record
     * has not changed, and whether the device it names is still there. Status reads only the state directory, so it
     * cannot tell such a call running now from one that failed (its record stays for kubelet's retry) or one cut short
     * by the plugin's stop (the starting plugin finishes or undoes it); the volume is not usable here in any of them.
     */
    static Optional<StatusProblem> unfinished(StagingRecord record, Optional<NodeStatusReader.Device> device,
                                              RecordedBoot boot) {
        if (record.getPhase() == StagePhase.STAGED) {
            return Optional.empty();
        }
        boolean unstage = record.getPhase() == StagePhase.UNSTAGING;
        StringBuilder message = new StringBuilder(unstage ? "NodeUnstageVolume" : "NodeStageVolume")
                .append(" of volume ").append(record.getVolumeId()).append(" has not finished: its record is in phase ")
                .append(record.getPhase().name());
        updatedAt(record).ifPresent(at -> message.append(" since ").append(at));
        message.append(" (a call still running, or one that failed or was cut short)");
        if (device.isPresent() && boot == RecordedBoot.EARLIER_BOOT) {
            message.append("; its device ").append(device.get().path()).append(" is of an earlier boot of the node");
        } else if (device.isPresent() && !device.get().present()) {
            message.append("; its device ").append(device.get().path()).append(" (").append(device.get().number())
                    .append(") is gone from the node");
        }
        return Optional.of(new StatusProblem(unstage ? UNSTAGE_INCOMPLETE : STAGE_INCOMPLETE,
                HealthProblem.Severity.INACCESSIBLE, message.toString(),
                unstage ? NextSteps.UNSTAGE_INCOMPLETE : NextSteps.STAGE_INCOMPLETE));
    }

    /** When the record last changed; empty for one written without the time. */
    static Optional<Instant> updatedAt(StagingRecord record) {
        return record.getUpdatedUnixMillis() > 0
                ? Optional.of(Instant.ofEpochMilli(record.getUpdatedUnixMillis())) : Optional.empty();
    }
}
