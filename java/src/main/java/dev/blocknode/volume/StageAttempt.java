package dev.blocknode.volume;

import dev.blocknode.state.v1.BlockAccessRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.request.AccessType;

import java.util.Optional;

/**
 * One attempt to stage a volume, as its steps share it: the plan, the record an earlier attempt left (if any), and
 * the record this attempt builds and saves phase by phase.
 *
 * @param existing the earlier attempt's record, read under the volume's operation guard
 * @param record   this attempt's record: what it stages, where and how (secrets are never kept)
 */
record StageAttempt(StagePlan plan, Optional<StagingRecord> existing, StagingRecord.Builder record) {

    /** The attempt that stages {@code plan}, its record started from {@code existing}'s (no phase yet). */
    static StageAttempt of(StagePlan plan, Optional<StagingRecord> existing) {
        StagingRecord.Builder record = existing.map(StagingRecord::toBuilder).orElseGet(StagingRecord::newBuilder)
                .setVolumeId(plan.volumeId())
                .setTransport(plan.transport().name())
                .setStagingPath(plan.staging().toString())
                .setAccessMode(plan.capability().accessMode().name())
                .clearVolumeContext().putAllVolumeContext(plan.attachRequest().volumeContext())
                .clearPublishContext().putAllPublishContext(plan.attachRequest().publishContext());
        if (plan.capability().accessType() instanceof AccessType.Mount mount) {
            record.setMount(MountAccessRecord.newBuilder()
                    .setFsType(plan.requestedFs().map(FilesystemType::kernelName).orElse(""))
                    .addAllMountFlags(mount.mountFlags()));
        } else {
            record.setBlock(BlockAccessRecord.getDefaultInstance());
        }
        return new StageAttempt(plan, existing, record);
    }

    /**
     * True when no earlier attempt had recorded a device: there was none, or one cut short inside its attach. Such
     * an attempt records its intent first, and a refusal undoes it ({@link RefusedStageUndo}).
     */
    static boolean noDeviceRecorded(Optional<StagingRecord> existing) {
        return existing.isEmpty() || existing.get().getPhase() == StagePhase.ATTACHING;
    }

    String volumeId() {
        return plan.volumeId();
    }
}
