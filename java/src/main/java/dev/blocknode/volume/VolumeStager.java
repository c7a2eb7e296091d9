package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.request.Requests;

import java.util.Optional;

/**
 * NodeStageVolume and NodeUnstageVolume: attach the device, verify it, format it only if blank, mount it
 * at the staging path; and the reverse, refusing to report success while anything of the volume is left.
 * A staging record is written before the host is changed, so a retry after a crash or timeout picks up
 * where the last attempt stopped.
 * <p>
 * A request is read once into a {@link StagePlan}; the stage's steps ({@link StageSteps}) work on it and on the
 * {@link StageAttempt} they share, a refused stage is undone by {@link RefusedStageUndo}, and an unstage is
 * {@link VolumeUnstager}'s.
 */
public final class VolumeStager {

    private final NodeParts node;
    private final OperationGuard guard;
    private final StageRequestRules rules;
    private final FilesystemSettings filesystem;
    private final StagedCheck staged;
    private final StageSteps steps;
    private final RefusedStageUndo undo;
    private final VolumeUnstager unstager;

    VolumeStager(NodeParts node, OperationGuard guard, FilesystemSettings filesystem,
                 StalePublications stalePublications, VolumeFences fences, VolumeLimit limit) {
        this.node = node;
        this.guard = guard;
        this.rules = new StageRequestRules(node.transports());
        this.filesystem = filesystem;
        FilesystemPreparer filesystems = new FilesystemPreparer(node.host().commands(), node.records(), filesystem);
        DeviceSteps deviceSteps = new DeviceSteps(new DeviceClaims(node.records()), fences,
                new VolumeEncryption(node.host(), node.records()), filesystems,
                new UnmountedFormat(node.host(), node.records(), filesystems));
        StagingMounts mounts = new StagingMounts(node.host(), node.paths());
        this.staged = new StagedCheck(node, mounts);
        this.undo = new RefusedStageUndo(node, deviceSteps);
        this.steps = new StageSteps(node, deviceSteps, limit, mounts, undo);
        this.unstager = new VolumeUnstager(node, deviceSteps, guard, stalePublications, undo);
    }

    public void stage(Requests.Stage request) throws VolumeException {
        StagePlan plan = StagePlan.of(request, node.paths(), rules, filesystem.defaultFilesystem());
        try (OperationGuard.Permit ignored = guard.enter(plan.volumeId(), "NodeStageVolume")) {
            Optional<StagingRecord> existing = node.records().find(plan.volumeId());
            if (staged.isStagedAlready(plan, existing)) {
                return;
            }
            boolean noDeviceRecorded = StageAttempt.noDeviceRecorded(existing);
            try {
                steps.run(StageAttempt.of(plan, existing), noDeviceRecorded);
            } catch (DeviceClaims.HeldByAnotherVolume refusal) {
                if (noDeviceRecorded) {
                    undo.forgetRefusedStage(plan.volumeId(), refusal);
                }
                throw refusal;
            } catch (VolumeException failure) {
                if (noDeviceRecorded && RefusedStageUndo.isRefusal(failure)) {
                    undo.undoRefusedStage(plan.volumeId(), failure);
                }
                throw failure;
            }
        }
    }

    public void unstage(Requests.Unstage request) throws VolumeException {
        unstager.unstage(request);
    }
}
