package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The undo of a stage that was refused, when no earlier attempt had recorded a device: kubelet takes a refusal as
 * final, treats the volume as not staged (it never unstages it) and retries the stage with what was fixed, so the
 * refused attempt must leave nothing behind. Also the undo of an interrupted attach, which unstage shares.
 */
final class RefusedStageUndo {

    // The stage's lines keep the logger operators know them by (docs/reference/log-format.md).
    private static final Logger LOG = Logger.getLogger(VolumeStager.class.getName());

    private final NodeParts node;
    private final DeviceSteps steps;

    RefusedStageUndo(NodeParts node, DeviceSteps steps) {
        this.node = node;
        this.steps = steps;
    }

    /**
     * INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS, NOT_FOUND: kubelet takes them as final, treats the
     * volume as not staged (it never unstages it) and retries the stage with what was fixed.
     */
    static boolean isRefusal(VolumeException failure) {
        return switch (failure.outcome()) {
            case INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS, NOT_FOUND -> true;
            default -> false;
        };
    }

    /** Undoes what the recorded, interrupted attach may have done (its contexts are in the record). */
    void abandonAttach(StagingRecord record) throws VolumeException {
        StagingRecords.transportOf(node.transports(), record).abandon(StagingRecords.attachRequest(record));
    }

    /**
     * A refusal leaves nothing: the attempt got no further than attaching (refusals all come before the
     * mount, and no earlier attempt had recorded a device), so what it attached is undone and its record
     * deleted, and the corrected retry starts clean, bound by none of the refused arguments. A filesystem it
     * made was taken off the device already ({@link UnmountedFormat}); one it could not take off stays, where
     * the retry's probe finds it. The caller still gets the refusal; a failed undo is added to it and logged.
     */
    void undoRefusedStage(String volumeId, VolumeException refusal) {
        try {
            Optional<StagingRecord> left = node.records().find(volumeId);
            if (left.isPresent()) {
                undoAttachAndForget(left.get());
                LOG.info(() -> "volume " + volumeId + ": the refused stage (" + refusal.outcome() + ") undid its "
                        + "attach and removed its staging record");
            }
        } catch (VolumeException undoFailed) {
            refusal.addSuppressed(undoFailed);
            LOG.warning(() -> "volume " + volumeId + ": cannot undo the refused stage (" + refusal.outcome()
                    + "); its record is kept for unstage or the next start to undo: " + undoFailed.getMessage());
        }
    }

    /**
     * A stage refused because another volume holds its device leaves nothing either, but touches nothing: the
     * attach found that volume's device, so nothing is abandoned, released or detached; only this attempt's
     * record (ATTACHING: it never named the device) is deleted. Should that fail, the record stays for unstage or
     * the next start, whose undo of an interrupted attach touches nothing another volume holds.
     */
    void forgetRefusedStage(String volumeId, VolumeException refusal) {
        try {
            node.records().delete(volumeId);
        } catch (VolumeException deleteFailed) {
            refusal.addSuppressed(deleteFailed);
            LOG.warning(() -> "volume " + volumeId + ": cannot delete the record of the refused stage: "
                    + deleteFailed.getMessage());
        }
    }

    private void undoAttachAndForget(StagingRecord left) throws VolumeException {
        steps.encryption().close(left); // a mapping holds the device: closed before anything below lets it go
        undoRefusedLuksFormat(left);
        steps.fences().release(left); // what a refusal after the reservation was taken (a device in use ...) leaves
        try {
            abandonAttach(left);
        } catch (VolumeException undoFailed) {
            // Kept as after a crash inside the attach: unstage and the start-up recovery undo an attach with
            // these contexts, and a retry is bound by nothing of the refused request.
            node.records().save(left.toBuilder().setPhase(StagePhase.ATTACHING).clearDevice().clearAttachment()
                    .clearBootId().build());
            throw undoFailed;
        }
        node.records().delete(left.getVolumeId());
    }

    /**
     * A LUKS2 header the refused call wrote on a blank device (its mapping closed) is taken off the same way as its
     * filesystem ({@link UnmountedFormat}): the retry finds the device blank, as this call did, and formats it with
     * whatever passphrase it brings. A device something holds keeps it, and the refusal says so.
     */
    private void undoRefusedLuksFormat(StagingRecord left) throws VolumeException {
        if (!left.hasCrypt() || !left.getCrypt().getFormattedHere() || !left.hasDevice()) {
            return;
        }
        Path device = StagingRecords.devicePath(left);
        try {
            if (node.host().blockDevices().isClaimed(device)) {
                throw VolumeException.precondition("device " + device + " is in use on this node; its new LUKS2"
                        + " header is left on it");
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot tell whether device " + device + " is in use", e);
        }
        node.records().save(left.toBuilder().setCrypt(left.getCrypt().toBuilder().setFormattedHere(false)
                .setFormattingStarted(true)).build());
        steps.filesystems().unformat(left.getVolumeId(), device);
    }
}
