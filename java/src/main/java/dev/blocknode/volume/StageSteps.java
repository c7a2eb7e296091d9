package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.logging.LogContext;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.volume.encryption.EncryptionKeys;
import dev.blocknode.volume.request.AccessType;

import java.util.Optional;
import java.util.logging.Logger;

/**
 * The stage itself, one phase after the other, each recorded before the next changes the host: ATTACHING (the
 * intent), STAGING (the attached device, once no other volume's record names it), the reservation at the storage
 * where the volume is fenced (recorded before it is taken, so an ATTACHING record never has one), the LUKS2
 * mapping of an encrypted volume, the filesystem and its mount, STAGED.
 */
final class StageSteps {

    // The stage's lines keep the logger operators know them by (docs/reference/log-format.md).
    private static final Logger LOG = Logger.getLogger(VolumeStager.class.getName());

    private final NodeParts node;
    private final DeviceSteps steps;
    private final VolumeLimit limit;
    private final StagingMounts mounts;
    private final StageMount mount;
    private final RefusedStageUndo undo;

    StageSteps(NodeParts node, DeviceSteps steps, VolumeLimit limit, StagingMounts mounts, RefusedStageUndo undo) {
        this.node = node;
        this.steps = steps;
        this.limit = limit;
        this.mounts = mounts;
        this.mount = new StageMount(node, steps.filesystems(), steps.unmountedFormat());
        this.undo = undo;
    }

    /**
     * Stages the attempt's volume from scratch, or on from where an earlier attempt stopped. When no earlier
     * attempt had recorded a device ({@link StageAttempt#noDeviceRecorded}), this one records its intent first.
     */
    void run(StageAttempt attempt, boolean noDeviceRecorded) throws VolumeException {
        StagePlan plan = attempt.plan();
        if (noDeviceRecorded) {
            // A new volume takes a place under the node's limit (refused before anything is made), and one volume
            // per staging path: both checked and the intent recorded under their node-wide locks.
            try (VolumeLimit.Admission admitted = limit.admit(plan.volumeId());
                 KeyedLocks.Held ignored = steps.claims().lockPath(plan.staging())) {
                steps.claims().requirePathFree(plan.volumeId(), plan.staging());
                mounts.createDirectory(plan.staging());
                recordIntent(attempt);
            }
        } else {
            mounts.createDirectory(plan.staging());
        }
        Attachment attachment = attach(attempt);
        recordDevice(attempt, attachment);
        steps.fences().acquire(plan.volumeId(), plan.transport(), plan.capability().accessMode(),
                plan.attachRequest(), attachment, attempt.record(), node.records());
        Attachment used = openIfEncrypted(attempt, attachment);
        if (plan.capability().accessType() instanceof AccessType.Mount access) {
            recordDeviceAndMount(attempt, attachment, used, access);
        } else {
            mounts.requireUnclaimed(plan.volumeId(), used);
        }
        node.records().save(attempt.record().setPhase(StagePhase.STAGED).build());
        CrashPoints.reach(CrashPoint.STAGE_STAGED);
        LogContext.outcome(LOG, () -> "staged volume " + plan.volumeId() + " (" + attachment.device() + ") at "
                + plan.staging());
    }

    /**
     * ATTACHING: the intent, durably, before the transport changes anything, so that unstage and the
     * start-up recovery can undo an attach cut short. A retry that asks for another device than the
     * interrupted attempt did undoes that attempt's attach first.
     */
    private void recordIntent(StageAttempt attempt) throws VolumeException {
        Optional<StagingRecord> existing = attempt.existing();
        StagePlan plan = attempt.plan();
        if (existing.isPresent()
                && !StageRetryRules.sameAttach(existing.get(), plan.transport(), plan.attachRequest())) {
            undo.abandonAttach(existing.get());
        }
        node.records().save(attempt.record().setPhase(StagePhase.ATTACHING).build());
        CrashPoints.reach(CrashPoint.STAGE_INTENT_RECORDED);
    }

    /**
     * The transport attaches and verifies the device; STAGING names it in the record (saved by the caller), with
     * this boot's id beside its number: the number means something in this boot only.
     */
    private Attachment attach(StageAttempt attempt) throws VolumeException {
        Attachment attachment = attempt.plan().transport().attach(attempt.plan().attachPlan());
        CrashPoints.reach(CrashPoint.STAGE_ATTACHED);
        node.records().stampBoot(attempt.record()).setPhase(StagePhase.STAGING)
                .setDevice(DeviceRecord.newBuilder()
                        .setPath(attachment.device().toString())
                        .setMajor(attachment.number().major())
                        .setMinor(attachment.number().minor())
                        .setIdentity(attachment.identity()))
                .clearAttachment()
                .putAllAttachment(attachment.details());
        return attachment;
    }

    /**
     * STAGING, naming the device, saved once no other volume's record names it (by number: see
     * {@link DeviceClaims}): two volumes whose contexts lead to the same device both attach it idempotently, and
     * only the first records it and the second finds its record. This comes before anything touches the
     * device (the reservation at the storage, the in-use check, a format, a mount). A crash after it leaves a
     * STAGING record: the retry continues from it, an unstage tears it down.
     *
     * @throws DeviceClaims.HeldByAnotherVolume when another volume's record names the device: the attach is that
     *                                          volume's too, so the caller never undoes it
     */
    private void recordDevice(StageAttempt attempt, Attachment attachment) throws VolumeException {
        try (KeyedLocks.Held ignored = steps.claims().lock(attachment.number())) {
            steps.claims().requireFree(attempt.volumeId(), attachment);
            node.records().save(attempt.record().build());
        }
        CrashPoints.reach(CrashPoint.STAGE_RECORDED);
    }

    /**
     * An encrypted volume (volume_context encryption: luks2) is used through its dm-crypt mapping: the one an earlier
     * attempt left open over this device, else the device is checked unclaimed, formatted LUKS2 if blank, and opened
     * (see {@link VolumeEncryption}). Any other volume is used through the attached device itself. A volume recorded
     * with a mapping that a retry asks to stage in the clear is refused: its data is encrypted.
     */
    private Attachment openIfEncrypted(StageAttempt attempt, Attachment attachment) throws VolumeException {
        String volumeId = attempt.volumeId();
        StagingRecord.Builder record = attempt.record();
        if (!attempt.plan().encrypted()) {
            if (record.hasCrypt()) {
                throw VolumeException.precondition("volume " + volumeId + " was staged encrypted (dm-crypt mapping "
                        + record.getCrypt().getMappingName() + "), but this stage does not ask for "
                        + EncryptionKeys.ENCRYPTION + ": luks2; unstage it first");
            }
            return attachment;
        }
        Attachment opened = openedOrOpen(attempt, attachment);
        if (record.getCrypt().getFormattedHere() && record.hasMount() && !record.getMount().getFormattedHere()) {
            // A new LUKS2 volume reads as what its never-written ciphertext decrypts to, noise, not zeros: the blank
            // check would refuse it as data. Nothing but our luksFormat wrote it, so its head is zeroed (where the
            // probe looks), and the filesystem is made as on any blank device.
            steps.filesystems().unformat(volumeId, opened.device());
        }
        return opened;
    }

    /** The mapping an earlier attempt left open over the device, recorded; else the device formatted and opened. */
    private Attachment openedOrOpen(StageAttempt attempt, Attachment attachment) throws VolumeException {
        String volumeId = attempt.volumeId();
        Optional<Attachment> open = steps.encryption().openedOver(volumeId, attachment);
        if (open.isPresent()) {
            VolumeEncryption.recordOpened(attempt.record(), open.get());
            node.records().save(attempt.record().build());
            return open.get();
        }
        mounts.requireUnclaimed(volumeId, attachment);
        return steps.encryption().open(volumeId, attempt.plan().passphrase().orElseThrow(), attachment,
                ofThisBoot(attempt.existing()), attempt.record());
    }

    /**
     * Filesystem access: the record with any format an earlier attempt left unfinished on the device, then the
     * filesystem prepared and mounted, unless an earlier attempt already mounted it here. {@code attachment} is the
     * attached device, {@code used} the one the filesystem lives on (the same, or an encrypted volume's mapping).
     */
    private void recordDeviceAndMount(StageAttempt attempt, Attachment attachment, Attachment used,
                                      AccessType.Mount access) throws VolumeException {
        StagingRecord.Builder record = attempt.record();
        FilesystemPreparer.carryOwnFormat(ofThisBoot(attempt.existing()), attachment, record.getMountBuilder());
        boolean mounted = mounts.alreadyMountedAt(attempt.volumeId(), attempt.plan().staging(), used);
        if (mounted) {
            record.getMountBuilder().setAwaitingFirstMount(false);
        } else {
            mounts.requireUnclaimed(attempt.volumeId(), used);
        }
        node.records().save(record.build());
        if (!mounted) {
            mount.mount(attempt, used.device(), access);
            CrashPoints.reach(CrashPoint.STAGE_MOUNTED);
        }
    }

    /** The earlier attempt's record, unless its device numbers are of an earlier boot (then they prove nothing). */
    private Optional<StagingRecord> ofThisBoot(Optional<StagingRecord> existing) {
        return existing.filter(r -> !node.records().ofEarlierBoot(r));
    }
}
