package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.logging.LogContext;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.InvalidSyscallArgumentException;
import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.BlockAccessRecord;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.DeviceIdentity;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.encryption.EncryptionKeys;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.Publications;
import dev.blocknode.volume.record.RecordedBoot;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * NodeStageVolume and NodeUnstageVolume: attach the device, verify it, format it only if blank, mount it
 * at the staging path; and the reverse, refusing to report success while anything of the volume is left.
 * A staging record is written before the host is changed, so a retry after a crash or timeout picks up
 * where the last attempt stopped.
 */
public final class VolumeStager {

    private static final Logger LOG = Logger.getLogger(VolumeStager.class.getName());

    private final Host host;
    private final KubeletPaths paths;
    private final StagingRecords records;
    private final Transports transports;
    private final OperationGuard guard;
    private final FilesystemPreparer filesystems;
    private final StagingRecordRebuilder rebuilder;
    private final StalePublications stalePublications;
    private final VolumeFences fences;
    private final DeviceClaims claims;
    private final StageRequestRules rules;
    private final VolumeLimit limit;
    private final SharedXfsUuid sharedXfsUuid;
    private final VolumeEncryption encryption;
    private final UnmountedFormat unmountedFormat;

    VolumeStager(Host host, KubeletPaths paths, StagingRecords records, Transports transports,
                 OperationGuard guard, FilesystemType defaultFilesystem, boolean fsckOnNode,
                 StalePublications stalePublications, VolumeFences fences, VolumeLimit limit) {
        this.limit = limit;
        this.host = host;
        this.paths = paths;
        this.records = records;
        this.transports = transports;
        this.rules = new StageRequestRules(transports);
        this.guard = guard;
        this.filesystems = new FilesystemPreparer(host.commands(), records, defaultFilesystem, fsckOnNode);
        this.unmountedFormat = new UnmountedFormat(host, records, filesystems);
        this.sharedXfsUuid = new SharedXfsUuid(host);
        this.encryption = new VolumeEncryption(host, records);
        this.claims = new DeviceClaims(records);
        this.rebuilder = new StagingRecordRebuilder(host, paths, records, transports, fences.nodeKey(), claims);
        this.stalePublications = stalePublications;
        this.fences = fences;
    }

    public void stage(Requests.Stage request) throws VolumeException {
        Path staging = paths.confine("staging_target_path", request.stagingPath());
        AttachRequest attachRequest = StageRequestRules.attachRequest(request);
        Transport transport = rules.transportFor(request, attachRequest);
        Optional<FilesystemType> requestedFs = StageRetryRules.requestedFilesystem(request.capability());
        filesystems.checkKeys(request.capability(), attachRequest, requestedFs);
        EncryptionKeys.passphrase(attachRequest);

        try (OperationGuard.Permit ignored = guard.enter(request.volumeId(), "NodeStageVolume")) {
            Optional<StagingRecord> existing = records.find(request.volumeId());
            if (isStagedAlready(existing, staging, transport, attachRequest, request.capability(), requestedFs)) {
                return;
            }
            boolean noDeviceRecorded = existing.isEmpty() || existing.get().getPhase() == StagePhase.ATTACHING;
            try {
                stageFromScratchOrRetry(request, staging, transport, attachRequest, requestedFs, existing,
                        noDeviceRecorded);
            } catch (DeviceClaims.HeldByAnotherVolume refusal) {
                if (noDeviceRecorded) {
                    forgetRefusedStage(request.volumeId(), refusal);
                }
                throw refusal;
            } catch (VolumeException failure) {
                if (noDeviceRecorded && isRefusal(failure)) {
                    undoRefusedStage(request.volumeId(), failure);
                }
                throw failure;
            }
        }
    }

    /**
     * An earlier attempt's record with a device binds this one (same staging path, same device, a compatible
     * capability: else a refusal); true when that attempt finished and its volume is still in place. An
     * ATTACHING record (a crash inside the attach) holds no device and promised nothing: the retry replaces it.
     */
    private boolean isStagedAlready(Optional<StagingRecord> existing, Path staging, Transport transport,
                                    AttachRequest attachRequest, VolumeCapability capability,
                                    Optional<FilesystemType> requestedFs) throws VolumeException {
        Optional<StagingRecord> deviceRecorded = existing.filter(r -> r.getPhase() != StagePhase.ATTACHING);
        if (deviceRecorded.isEmpty()) {
            return false;
        }
        StagingRecord record = deviceRecorded.get();
        if (!record.getStagingPath().equals(staging.toString())) {
            throw VolumeException.alreadyExists("volume " + record.getVolumeId() + " is already staged at "
                    + record.getStagingPath() + ", not at " + staging);
        }
        StageRetryRules.requireSameDevice(record, transport, attachRequest);
        StageRetryRules.requireCompatible(record, capability, requestedFs, capabilityBinds(record, staging));
        return record.getPhase() == StagePhase.STAGED && stillStaged(record, staging, transport);
    }

    /**
     * The stage itself, one phase after the other, each recorded before the next changes the host:
     * ATTACHING (the intent), STAGING (the attached device, once no other volume's record names it), the
     * reservation at the storage where the volume is fenced (recorded before it is taken, so an ATTACHING record
     * never has one), the filesystem and its mount, STAGED.
     * When no earlier attempt had recorded a device ({@code noDeviceRecorded}: none, or one cut short inside
     * its attach), this one records its intent first, and a refusal undoes it (see {@link #undoRefusedStage}).
     */
    private void stageFromScratchOrRetry(Requests.Stage request, Path staging, Transport transport,
                                         AttachRequest attachRequest, Optional<FilesystemType> requestedFs,
                                         Optional<StagingRecord> existing, boolean noDeviceRecorded)
            throws VolumeException {
        StagingRecord.Builder record = describe(request, staging, transport, requestedFs, existing);
        if (noDeviceRecorded) {
            // A new volume takes a place under the node's limit (refused before anything is made), and one volume
            // per staging path: both checked and the intent recorded under their node-wide locks.
            try (VolumeLimit.Admission admitted = limit.admit(request.volumeId());
                 KeyedLocks.Held ignored = claims.lockPath(staging)) {
                claims.requirePathFree(request.volumeId(), staging);
                createDirectory(paths, staging);
                recordIntent(existing, transport, attachRequest, record);
            }
        } else {
            createDirectory(paths, staging);
        }
        Attachment attachment = attach(transport, attachRequest, record);
        recordDevice(request.volumeId(), attachment, record);
        fences.acquire(request.volumeId(), transport, request.capability().accessMode(), attachRequest, attachment,
                record, records);
        Attachment used = openIfEncrypted(request.volumeId(), attachRequest, attachment, existing, record);
        if (request.capability().accessType() instanceof AccessType.Mount mount) {
            recordDeviceAndMount(request, staging, attachment, used, mount, requestedFs, existing, record);
        } else {
            requireUnclaimed(request.volumeId(), used);
        }
        records.save(record.setPhase(StagePhase.STAGED).build());
        CrashPoints.reach(CrashPoint.STAGE_STAGED);
        LogContext.outcome(LOG, () -> "staged volume " + request.volumeId() + " (" + attachment.device() + ") at "
                + staging);
    }

    /** The record of this attempt: what it stages, where and how (no phase yet; secrets are never kept). */
    private static StagingRecord.Builder describe(Requests.Stage request, Path staging, Transport transport,
                                                  Optional<FilesystemType> requestedFs,
                                                  Optional<StagingRecord> existing) {
        StagingRecord.Builder record = existing.map(StagingRecord::toBuilder).orElseGet(StagingRecord::newBuilder)
                .setVolumeId(request.volumeId())
                .setTransport(transport.name())
                .setStagingPath(staging.toString())
                .setAccessMode(request.capability().accessMode().name())
                .clearVolumeContext().putAllVolumeContext(request.volumeContext())
                .clearPublishContext().putAllPublishContext(request.publishContext());
        if (request.capability().accessType() instanceof AccessType.Mount mount) {
            record.setMount(MountAccessRecord.newBuilder()
                    .setFsType(requestedFs.map(FilesystemType::kernelName).orElse(""))
                    .addAllMountFlags(mount.mountFlags()));
        } else {
            record.setBlock(BlockAccessRecord.getDefaultInstance());
        }
        return record;
    }

    /**
     * ATTACHING: the intent, durably, before the transport changes anything, so that unstage and the
     * start-up recovery can undo an attach cut short. A retry that asks for another device than the
     * interrupted attempt did undoes that attempt's attach first.
     */
    private void recordIntent(Optional<StagingRecord> existing, Transport transport, AttachRequest attachRequest,
                              StagingRecord.Builder record) throws VolumeException {
        if (existing.isPresent() && !StageRetryRules.sameAttach(existing.get(), transport, attachRequest)) {
            abandonAttach(existing.get());
        }
        records.save(record.setPhase(StagePhase.ATTACHING).build());
        CrashPoints.reach(CrashPoint.STAGE_INTENT_RECORDED);
    }

    /**
     * The transport attaches and verifies the device; STAGING names it in the record (saved by the caller), with
     * this boot's id beside its number: the number means something in this boot only.
     */
    private Attachment attach(Transport transport, AttachRequest attachRequest, StagingRecord.Builder record)
            throws VolumeException {
        Attachment attachment = transport.attach(attachRequest);
        CrashPoints.reach(CrashPoint.STAGE_ATTACHED);
        records.stampBoot(record).setPhase(StagePhase.STAGING)
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
     * {@link DeviceClaims}), under the device's node-wide lock, so that of two stages of different volumes on one
     * device only the first records it and the second finds its record. This comes before anything touches the
     * device (the reservation at the storage, the in-use check, a format, a mount). A crash after it leaves a
     * STAGING record: the retry continues from it, an unstage tears it down.
     *
     * @throws DeviceClaims.HeldByAnotherVolume when another volume's record names the device: the attach is that
     *                                          volume's too, so the caller never undoes it
     */
    private void recordDevice(String volumeId, Attachment attachment, StagingRecord.Builder record)
            throws VolumeException {
        try (KeyedLocks.Held ignored = claims.lock(attachment.number())) {
            claims.requireFree(volumeId, attachment);
            records.save(record.build());
        }
        CrashPoints.reach(CrashPoint.STAGE_RECORDED);
    }

    /**
     * An encrypted volume (volume_context encryption: luks2) is used through its dm-crypt mapping: the one an earlier
     * attempt left open over this device, else the device is checked unclaimed, formatted LUKS2 if blank, and opened
     * (see {@link VolumeEncryption}). Any other volume is used through the attached device itself. A volume recorded
     * with a mapping that a retry asks to stage in the clear is refused: its data is encrypted.
     */
    private Attachment openIfEncrypted(String volumeId, AttachRequest attachRequest, Attachment attachment,
                                       Optional<StagingRecord> existing, StagingRecord.Builder record)
            throws VolumeException {
        if (!EncryptionKeys.encrypted(attachRequest)) {
            if (record.hasCrypt()) {
                throw VolumeException.precondition("volume " + volumeId + " was staged encrypted (dm-crypt mapping "
                        + record.getCrypt().getMappingName() + "), but this stage does not ask for "
                        + EncryptionKeys.ENCRYPTION + ": luks2; unstage it first");
            }
            return attachment;
        }
        Optional<Attachment> open = encryption.openedOver(volumeId, attachment);
        Attachment opened;
        if (open.isPresent()) {
            opened = open.get();
            VolumeEncryption.recordOpened(record, opened);
            records.save(record.build());
        } else {
            requireUnclaimed(volumeId, attachment);
            opened = encryption.open(volumeId, attachRequest, attachment, ofThisBoot(existing), record);
        }
        if (record.getCrypt().getFormattedHere() && record.hasMount() && !record.getMount().getFormattedHere()) {
            // A new LUKS2 volume reads as what its never-written ciphertext decrypts to, noise, not zeros: the blank
            // check would refuse it as data. Nothing but our luksFormat wrote it, so its head is zeroed (where the
            // probe looks), and the filesystem is made as on any blank device.
            filesystems.unformat(volumeId, opened.device());
        }
        return opened;
    }

    /**
     * Filesystem access: the record with any format an earlier attempt left unfinished on the device, then the
     * filesystem prepared and mounted, unless an earlier attempt already mounted it here. {@code attachment} is the
     * attached device, {@code used} the one the filesystem lives on (the same, or an encrypted volume's mapping).
     */
    private void recordDeviceAndMount(Requests.Stage request, Path staging, Attachment attachment, Attachment used,
                                      AccessType.Mount mount, Optional<FilesystemType> requestedFs,
                                      Optional<StagingRecord> existing, StagingRecord.Builder record)
            throws VolumeException {
        FilesystemPreparer.carryOwnFormat(ofThisBoot(existing), attachment, record.getMountBuilder());
        boolean mounted = alreadyMountedAt(request.volumeId(), staging, used);
        if (mounted) {
            record.getMountBuilder().setAwaitingFirstMount(false);
        } else {
            requireUnclaimed(request.volumeId(), used);
        }
        records.save(record.build());
        if (!mounted) {
            mountFilesystem(request, staging, used, mount, requestedFs, record);
            CrashPoints.reach(CrashPoint.STAGE_MOUNTED);
        }
    }

    public void unstage(Requests.Unstage request) throws VolumeException {
        Path staging = paths.confine("staging_target_path", request.stagingPath());
        try (OperationGuard.Permit ignored = guard.enter(request.volumeId(), "NodeUnstageVolume")) {
            Optional<StagingRecord> found = records.find(request.volumeId());
            if (found.isEmpty()) {
                found = rebuilder.rebuild(request.volumeId(), staging);
                if (found.isEmpty()) {
                    return;
                }
            }
            StagingRecord record = found.get();
            if (!record.getStagingPath().equals(staging.toString())) {
                throw VolumeException.precondition("volume " + request.volumeId() + " is staged at "
                        + record.getStagingPath() + ", not at " + staging + "; nothing was unstaged");
            }
            if (record.getPhase() == StagePhase.ATTACHING) {
                // Staging died inside the transport's attach: no device was recorded, nothing was mounted.
                abandonAttach(record);
                records.delete(request.volumeId());
                LogContext.outcome(LOG, () -> "unstaged volume " + request.volumeId() + ": undid its interrupted attach");
                return;
            }
            claims.requireOwned(record);
            requireUnpublished(record);
            release(record, staging);
            LogContext.outcome(LOG, () -> "unstaged volume " + request.volumeId() + " from " + staging);
        }
    }

    /**
     * No pod may still use the volume. A publication kubelet forgot, whose pod is gone, would refuse every
     * unstage for ever: it is retired first, and so are read-only views of publications that died unbound.
     */
    private void requireUnpublished(StagingRecord record) throws VolumeException {
        List<String> live = stalePublications.retire(record, Publications.live(host, record));
        if (!live.isEmpty()) {
            throw VolumeException.precondition("volume " + record.getVolumeId()
                    + " is still published at " + live + "; unpublish it first");
        }
        stalePublications.releaseUnboundViews(record.getVolumeId());
    }

    /**
     * UNSTAGING recorded, then the reverse of the stage: unmount, prove nothing else on the node holds the
     * device, flush, release the reservation at the storage (while the paths are still there), detach; the record
     * goes last, so a retry after a crash anywhere here finishes the job.
     */
    private void release(StagingRecord staged, Path staging) throws VolumeException {
        StagingRecord record = staged.toBuilder().setPhase(StagePhase.UNSTAGING).clearPublications().build();
        records.save(record);
        CrashPoints.reach(CrashPoint.UNSTAGE_RECORDED);
        DeviceNumber number = StagingRecords.usedNumber(record);
        // The numbers of a record of an earlier boot name nothing of this volume's: what is mounted or held at them
        // now is another device's, never unmounted, waited for or flushed on this volume's behalf. (Nothing of the
        // volume was mounted in this boot: a stage records this boot's id with the device before it mounts.)
        boolean numbersOfThisBoot = !records.ofEarlierBoot(record);
        if (record.hasMount() && numbersOfThisBoot) {
            unmountStagingPath(record.getVolumeId(), staging, number);
        }
        CrashPoints.reach(CrashPoint.UNSTAGE_UNMOUNTED);
        if (numbersOfThisBoot) {
            requireNotMountedElsewhere(record.getVolumeId(), number);
            // A filesystem of ours never mounted (its stage failed, or was cut short, before the mount): the device is
            // left blank, as its stage found it, for whatever the next stage of it asks. Before the mapping closes.
            unmountedFormat.takeOff(record.getVolumeId(), StagingRecords.usedPath(record), record.toBuilder(),
                    "unstaged before its first mount");
        }
        // after the unmount, before the attached device the mapping holds is flushed and detached
        if (encryption.close(record)) {
            CrashPoints.reach(CrashPoint.UNSTAGE_CRYPT_CLOSED);
        }
        if (numbersOfThisBoot) {
            flush(record);
        }
        fences.release(record);
        Transport transport = StagingRecords.transportOf(transports, record);
        if (numbersOfThisBoot) {
            transport.detach(StagingRecords.attachment(record));
        } else {
            // What the recorded attach made died with its boot, and a detach goes partly by the recorded number
            // (NVMe/TCP: which volumes use a controller). What the same contexts may have brought back since (a
            // login at boot) is undone as after an interrupted attach: found by the contexts, used by nobody else.
            transport.abandon(StagingRecords.attachRequest(record));
        }
        CrashPoints.reach(CrashPoint.UNSTAGE_DETACHED);
        records.delete(record.getVolumeId());
    }

    /** Undoes what the recorded, interrupted attach may have done (its contexts are in the record). */
    private void abandonAttach(StagingRecord record) throws VolumeException {
        StagingRecords.transportOf(transports, record).abandon(StagingRecords.attachRequest(record));
    }

    /**
     * INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS, NOT_FOUND: kubelet takes them as final, treats the
     * volume as not staged (it never unstages it) and retries the stage with what was fixed.
     */
    private static boolean isRefusal(VolumeException failure) {
        return switch (failure.outcome()) {
            case INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS, NOT_FOUND -> true;
            default -> false;
        };
    }

    /**
     * A refusal leaves nothing: the attempt got no further than attaching (refusals all come before the
     * mount, and no earlier attempt had recorded a device), so what it attached is undone and its record
     * deleted, and the corrected retry starts clean, bound by none of the refused arguments. A filesystem it
     * made was taken off the device already ({@link UnmountedFormat}); one it could not take off stays, where
     * the retry's probe finds it. The caller still gets the refusal; a failed undo is added to it and logged.
     */
    private void undoRefusedStage(String volumeId, VolumeException refusal) {
        try {
            Optional<StagingRecord> left = records.find(volumeId);
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
            if (host.blockDevices().isClaimed(device)) {
                throw VolumeException.precondition("device " + device + " is in use on this node; its new LUKS2"
                        + " header is left on it");
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot tell whether device " + device + " is in use", e);
        }
        records.save(left.toBuilder().setCrypt(left.getCrypt().toBuilder().setFormattedHere(false)
                .setFormattingStarted(true)).build());
        filesystems.unformat(left.getVolumeId(), device);
    }

    /**
     * A stage refused because another volume holds its device leaves nothing either, but touches nothing: the
     * attach found that volume's device, so nothing is abandoned, released or detached; only this attempt's
     * record (ATTACHING: it never named the device) is deleted. Should that fail, the record stays for unstage or
     * the next start, whose undo of an interrupted attach touches nothing another volume holds.
     */
    private void forgetRefusedStage(String volumeId, VolumeException refusal) {
        try {
            records.delete(volumeId);
        } catch (VolumeException deleteFailed) {
            refusal.addSuppressed(deleteFailed);
            LOG.warning(() -> "volume " + volumeId + ": cannot delete the record of the refused stage: "
                    + deleteFailed.getMessage());
        }
    }

    private void undoAttachAndForget(StagingRecord left) throws VolumeException {
        encryption.close(left); // a mapping holds the device: closed before anything below lets it go
        undoRefusedLuksFormat(left);
        fences.release(left); // what a refusal after the reservation was taken (a device in use ...) leaves there
        try {
            abandonAttach(left);
        } catch (VolumeException undoFailed) {
            // Kept as after a crash inside the attach: unstage and the start-up recovery undo an attach with
            // these contexts, and a retry is bound by nothing of the refused request.
            records.save(left.toBuilder().setPhase(StagePhase.ATTACHING).clearDevice().clearAttachment().clearBootId()
                    .build());
            throw undoFailed;
        }
        records.delete(left.getVolumeId());
    }

    /** The earlier attempt's record, unless its device numbers are of an earlier boot (then they prove nothing). */
    private Optional<StagingRecord> ofThisBoot(Optional<StagingRecord> existing) {
        return existing.filter(r -> !records.ofEarlierBoot(r));
    }

    /** Whether the record's capability binds a retry (see {@link StageRetryRules#requireCompatible}). */
    private boolean capabilityBinds(StagingRecord record, Path staging) throws VolumeException {
        return record.getPhase() == StagePhase.STAGED
                || (record.hasMount() && holdsMountOf(staging, StagingRecords.usedNumber(record)));
    }

    /**
     * True when what the record says is staged is really in place (after a restart or a reboot, it may not be).
     * A record of an earlier boot never is: its numbers name nothing of the volume's (a device the transport does
     * not know, an LVM volume or a mapping, would prove nothing either way); it is staged again, idempotently, as
     * kubelet's stage after a reboot expects, and the record rewritten with this boot's id. A record written
     * before records carried a boot id (an upgrade, which rarely comes with a reboot) is judged as before, by
     * its device and mount, and stamped with this boot's id when it passes: staging every volume of an upgraded
     * node again would refuse a raw block volume whose pod holds its device exclusively.
     */
    private boolean stillStaged(StagingRecord record, Path staging, Transport transport) throws VolumeException {
        RecordedBoot boot = records.bootOf(record);
        if (boot == RecordedBoot.EARLIER_BOOT) {
            LOG.info(() -> "volume " + record.getVolumeId() + " is recorded as staged in an earlier boot:"
                    + " staging it again");
            return false;
        }
        DeviceNumber number = StagingRecords.usedNumber(record);
        if (!host.blockDevices().exists(number) || numberNowNamesAnotherDevice(record, transport)) {
            return false;
        }
        boolean inPlace = record.hasBlock() || holdsMountOf(staging, number);
        if (inPlace && boot == RecordedBoot.UNKNOWN) {
            records.save(records.stampBoot(record.toBuilder()).build());
        }
        return inPlace;
    }

    /**
     * True when the transport recognizes the device at the recorded number as another one than the record's
     * (their identities differ). The kernel hands device numbers out afresh at every boot: after a reboot, a map
     * a restage of another volume made may have the number this record names, and a raw block volume (which no
     * staging mount ties to its device) would otherwise be taken as staged on it, and published with the other
     * volume's data. A device the transport does not recognize, or a record without an identity, proves nothing.
     */
    private boolean numberNowNamesAnotherDevice(StagingRecord record, Transport transport) throws VolumeException {
        String recorded = record.getDevice().getIdentity();
        if (recorded.isEmpty()) {
            return false;
        }
        return transport.attachmentOf(StagingRecords.deviceNumber(record))
                .filter(now -> DeviceIdentity.provablyDifferent(recorded, now.identity()))
                .isPresent();
    }

    private boolean holdsMountOf(Path staging, DeviceNumber number) throws VolumeException {
        return mountedAt(staging).map(stat -> stat.device().equals(number)).orElse(false);
    }

    /**
     * True when the volume's device is already mounted at the staging path (an earlier attempt got that far);
     * ALREADY_EXISTS when something else is mounted there. Checked before anything is recorded.
     */
    private boolean alreadyMountedAt(String volumeId, Path staging, Attachment attachment) throws VolumeException {
        Optional<FileStat> mounted = mountedAt(staging);
        if (mounted.isEmpty()) {
            return false;
        }
        if (!mounted.get().device().equals(attachment.number())) {
            throw VolumeException.alreadyExists("staging path " + staging + " already holds a mount of device "
                    + mounted.get().device() + ", not of volume " + volumeId + "'s device " + attachment.device()
                    + " (" + attachment.number() + ")");
        }
        return true;
    }

    /**
     * A device that something else on the node already holds (a filesystem mounted by hand or by another
     * volume, a multipath map over a path device, md, swap) is never formatted, mounted or handed out.
     */
    private void requireUnclaimed(String volumeId, Attachment attachment) throws VolumeException {
        try {
            if (!host.blockDevices().isClaimed(attachment.device())) {
                return;
            }
            List<String> users = new java.util.ArrayList<>();
            for (MountEntry entry : host.mounter().mountsWhere(e -> e.device().equals(attachment.number()))) {
                users.add("mounted at " + entry.mountPoint());
            }
            for (String holder : host.blockDevices().holders(attachment.number())) {
                users.add("held by " + holder);
            }
            throw VolumeException.precondition("device " + attachment.device() + " of volume " + volumeId
                    + " is in use on this node" + (users.isEmpty() ? "" : " (" + String.join(", ", users) + ")")
                    + "; refusing to stage it");
        } catch (IOException e) {
            throw VolumeException.internal("cannot tell whether device " + attachment.device() + " is in use", e);
        }
    }

    /**
     * The filesystem prepared (found, or made on a blank device) and mounted at the staging path. When the mount of a
     * filesystem this plugin made fails, that filesystem was never mounted: it is taken off the device before the
     * failure is reported ({@link UnmountedFormat}), so the device is blank again and a corrected stage starts over.
     */
    private void mountFilesystem(Requests.Stage request, Path staging, Attachment attachment,
                                 AccessType.Mount mount, Optional<FilesystemType> requestedFs,
                                 StagingRecord.Builder record) throws VolumeException {
        Path device = attachment.device();
        MountOptions options = mount.options();
        if (request.capability().accessMode().readOnly()) {
            options = options.withReadOnly();
        }
        FilesystemType type = filesystems.prepare(request.volumeId(), device, requestedFs, options, record);
        try {
            options = sharedXfsUuid.forMount(request.volumeId(), device, type, record.getMount().getFormattedHere(),
                    options);
            mountAt(staging, device, type, options, record);
        } catch (VolumeException failure) {
            throw afterTakingOffUnmountedFormat(request.volumeId(), device, record, failure);
        }
        record.getMountBuilder().setAwaitingFirstMount(false);
    }

    private void mountAt(Path staging, Path device, FilesystemType type, MountOptions options,
                         StagingRecord.Builder record) throws VolumeException {
        try (OpenedPath directory = paths.openDirectoryCreating("staging_target_path", staging)) {
            Phases.run("mount", () -> host.mounter().mount(device, directory.viaDescriptor(), type.kernelName(),
                    options));
        } catch (InvalidSyscallArgumentException e) {
            List<String> mkfsFlags = UnmountedFormat.awaitsFirstMount(record)
                    ? FilesystemKeys.mkfsOptions(StagingRecords.attachRequest(record.build()), type).flags() : List.of();
            if (!options.data().isEmpty() || !mkfsFlags.isEmpty()) {
                throw einvalRefusal(staging, device, type, options, mkfsFlags, e);
            }
            throw VolumeException.internal("mounting " + device + " (" + type.kernelName() + ") at " + staging
                    + " failed", e);
        } catch (IOException e) {
            throw VolumeException.internal("mounting " + device + " (" + type.kernelName() + ") at " + staging
                    + " failed", e);
        }
    }

    /**
     * The kernel refused the mount with EINVAL although every option passed its grammar (FilesystemOptions,
     * MkfsOptions) and mkfs made the filesystem: a combination, a feature this device or kernel lacks. Still the
     * caller's to fix: INVALID_ARGUMENT, naming the options, never their values.
     */
    private static VolumeException einvalRefusal(Path staging, Path device, FilesystemType type, MountOptions options,
                                                 List<String> mkfsFlags, InvalidSyscallArgumentException e) {
        List<String> names = options.data().stream().map(o -> o.contains("=") ? o.substring(0, o.indexOf('=') + 1) : o)
                .toList();
        String mounting = "mounting " + device + " (" + type.kernelName() + ") at " + staging
                + (names.isEmpty() ? "" : " with options " + names) + " failed with EINVAL: ";
        String hint = SelinuxMountContexts.einvalHint(options) + " (" + e.getMessage() + ")";
        if (mkfsFlags.isEmpty()) {
            return VolumeException.invalid(mounting + "check volume_capability.mount.mount_flags" + hint);
        }
        return VolumeException.invalid(mounting + "this node's kernel refuses the filesystem that volume_context."
                + FilesystemKeys.MKFS_OPTIONS + " " + mkfsFlags + " made" + (names.isEmpty() ? "" : ", or those options")
                + ": check the " + FilesystemKeys.MKFS_OPTIONS + (names.isEmpty() ? "" : " and volume_capability.mount"
                + ".mount_flags") + hint);
    }

    /** The failure of a first mount, once the filesystem this plugin made for it is off the device again. */
    private VolumeException afterTakingOffUnmountedFormat(String volumeId, Path device, StagingRecord.Builder record,
                                                          VolumeException failure) {
        try {
            if (unmountedFormat.takeOff(volumeId, device, record, "its first mount failed")) {
                VolumeException said = new VolumeException(failure.outcome(), failure.getMessage() + "; the "
                        + record.getMount().getFsType() + " filesystem this plugin made was never mounted, and is"
                        + " taken off: device " + device + " is blank again", failure.getCause());
                for (Throwable suppressed : failure.getSuppressed()) {
                    said.addSuppressed(suppressed);
                }
                return said;
            }
        } catch (VolumeException notTakenOff) {
            failure.addSuppressed(notTakenOff);
            LOG.warning(() -> "volume " + volumeId + ": the filesystem this plugin made on device " + device
                    + " was never mounted, and cannot be taken off: " + notTakenOff.getMessage());
        }
        return failure;
    }

    /** Unmounts the volume's filesystem at the staging path, by name in its opened directory, following nothing. */
    private void unmountStagingPath(String volumeId, Path staging, DeviceNumber number) throws VolumeException {
        Optional<OpenedPath> parent = paths.openParentIfPresent("staging_target_path", staging);
        if (parent.isEmpty()) {
            return;
        }
        String name = staging.getFileName().toString();
        try (OpenedPath directory = parent.get()) {
            Path entry = directory.childViaDescriptor(name);
            FileStat mounted;
            try {
                mounted = host.mounter().stat(entry);
            } catch (NoSuchPathException absent) {
                return;
            }
            if (!Publications.isMountPoint(host, entry, mounted)) {
                return;
            }
            if (!mounted.device().equals(number)) {
                // Not ours: never unmount another volume. Whether ours is still mounted anywhere is checked next.
                LOG.warning(() -> "staging path " + staging + " holds device " + mounted.device() + ", not volume "
                        + volumeId + "'s device " + number + "; leaving that mount alone");
                return;
            }
            Phases.run("unmount", () -> host.mounter().unmount(directory.childViaDescriptor(name)));
        } catch (IOException e) {
            throw VolumeException.internal("unmounting staging path " + staging + " of volume " + volumeId
                    + " failed", e);
        }
    }

    /** The one check that needs the whole mount table: nothing else on the node may still use the device. */
    private void requireNotMountedElsewhere(String volumeId, DeviceNumber number) throws VolumeException {
        try {
            Optional<String> name = host.blockDevices().kernelName(number);
            List<MountEntry> users = host.mounter().mountsWhere(e -> e.device().equals(number)
                    || (name.isPresent() && e.fsType().equals("devtmpfs") && e.root().equals("/" + name.get())));
            if (!users.isEmpty()) {
                throw VolumeException.precondition("device " + number + " of volume " + volumeId
                        + " is still mounted at " + users.stream().map(MountEntry::mountPoint).toList()
                        + "; it was not released");
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the mount table", e);
        }
    }

    private void flush(StagingRecord record) throws VolumeException {
        DeviceNumber number = StagingRecords.deviceNumber(record);
        try {
            Optional<Path> node = host.blockDevices().nodeFor(number);
            if (node.isPresent()) {
                Phases.run("flush", () -> host.blockDevices().flush(node.get()));
            }
        } catch (IOException e) {
            throw VolumeException.internal("flushing device " + record.getDevice().getPath() + " (" + number
                    + ") of volume " + record.getVolumeId() + " failed", e);
        }
    }

    private static void createDirectory(KubeletPaths paths, Path staging) throws VolumeException {
        try (OpenedPath ignored = paths.openDirectoryCreating("staging_target_path", staging)) {
            // created (or there already) beneath the kubelet root, through no symlink
        } catch (IOException e) {
            throw VolumeException.internal("cannot close staging directory " + staging, e);
        }
    }

    /** The staging path's statx when something is mounted there, by descriptor; empty when nothing is. */
    private Optional<FileStat> mountedAt(Path staging) throws VolumeException {
        Optional<OpenedPath> opened = paths.openIfPresent("staging_target_path", staging);
        if (opened.isEmpty()) {
            return Optional.empty();
        }
        try (OpenedPath directory = opened.get()) {
            FileStat stat = directory.stat();
            return Publications.isMountPoint(host, staging, stat) ? Optional.of(stat) : Optional.empty();
        } catch (IOException e) {
            throw VolumeException.internal("cannot inspect staging path " + staging, e);
        }
    }
}
