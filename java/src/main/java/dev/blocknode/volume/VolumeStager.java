package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.logging.LogContext;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.os.natives.NoSuchPathException;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.BlockAccessRecord;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.filesystem.DeviceContent;
import dev.blocknode.volume.filesystem.DeviceProbe;
import dev.blocknode.volume.filesystem.FilesystemType;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;
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
    private final DeviceProbe probe;
    private final FilesystemType defaultFilesystem;
    private final StagingRecordRebuilder rebuilder;
    private final StalePublications stalePublications;

    VolumeStager(Host host, KubeletPaths paths, StagingRecords records, Transports transports,
                 OperationGuard guard, FilesystemType defaultFilesystem, StalePublications stalePublications) {
        this.host = host;
        this.paths = paths;
        this.records = records;
        this.transports = transports;
        this.guard = guard;
        this.probe = new DeviceProbe(host.commands());
        this.defaultFilesystem = defaultFilesystem;
        this.rebuilder = new StagingRecordRebuilder(host, paths, records, transports);
        this.stalePublications = stalePublications;
    }

    public void stage(Requests.Stage request) throws VolumeException {
        Path staging = paths.confine("staging_target_path", request.stagingPath());
        AttachRequest attachRequest = new AttachRequest(request.volumeId(), request.volumeContext(),
                request.publishContext(), request.secrets());
        Transport transport = transports.select(attachRequest);
        transport.validate(attachRequest);
        Optional<FilesystemType> requestedFs = requestedFilesystem(request.capability());

        try (OperationGuard.Permit ignored = guard.enter(request.volumeId(), "NodeStageVolume")) {
            Optional<StagingRecord> existing = records.find(request.volumeId());
            // An ATTACHING record (a crash inside the attach) holds no device and promised nothing: the retry
            // replaces it, undoing the interrupted attach first when it asks for another device.
            Optional<StagingRecord> deviceRecorded = existing.filter(r -> r.getPhase() != StagePhase.ATTACHING);
            if (deviceRecorded.isPresent()) {
                StagingRecord record = deviceRecorded.get();
                if (!record.getStagingPath().equals(staging.toString())) {
                    throw VolumeException.alreadyExists("volume " + request.volumeId() + " is already staged at "
                            + record.getStagingPath() + ", not at " + staging);
                }
                requireSameDevice(record, transport, attachRequest);
                requireCompatible(record, request.capability(), requestedFs, capabilityBinds(record, staging));
                if (record.getPhase() == StagePhase.STAGED && stillStaged(record, staging)) {
                    return;
                }
            }
            attachAndMount(request, staging, transport, attachRequest, requestedFs, existing);
        }
    }

    /**
     * The stage itself, past the checks against an earlier attempt's record: attach, verify, format, mount.
     * When no earlier attempt had recorded a device, a refusal undoes this one (see {@link #undoRefusedStage}).
     */
    private void attachAndMount(Requests.Stage request, Path staging, Transport transport, AttachRequest attachRequest,
                                Optional<FilesystemType> requestedFs, Optional<StagingRecord> existing)
            throws VolumeException {
        boolean noDeviceRecorded = existing.isEmpty() || existing.get().getPhase() == StagePhase.ATTACHING;
        try {
            createDirectory(paths, staging);
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
            if (noDeviceRecorded) {
                if (existing.isPresent() && !sameAttach(existing.get(), transport, attachRequest)) {
                    // The retry asks for another device: undo the interrupted attach before its record is replaced.
                    abandonAttach(existing.get());
                }
                records.save(record.setPhase(StagePhase.ATTACHING).build());
                CrashPoints.reach(CrashPoint.STAGE_INTENT_RECORDED);
            }
            Attachment attachment = transport.attach(attachRequest);
            CrashPoints.reach(CrashPoint.STAGE_ATTACHED);
            record.setPhase(StagePhase.STAGING)
                    .setDevice(DeviceRecord.newBuilder()
                            .setPath(attachment.device().toString())
                            .setMajor(attachment.number().major())
                            .setMinor(attachment.number().minor())
                            .setIdentity(attachment.identity()))
                    .clearAttachment()
                    .putAllAttachment(attachment.details());
            if (request.capability().accessType() instanceof AccessType.Mount mount) {
                interruptedFormat(existing, attachment).ifPresent(fs ->
                        record.getMountBuilder().setFormattingStarted(fs));
                boolean mounted = alreadyMountedAt(request.volumeId(), staging, attachment);
                if (!mounted) {
                    requireUnclaimed(request.volumeId(), attachment);
                }
                records.save(record.build());
                CrashPoints.reach(CrashPoint.STAGE_RECORDED);
                if (!mounted) {
                    mountFilesystem(request, staging, attachment, mount, requestedFs, record);
                    CrashPoints.reach(CrashPoint.STAGE_MOUNTED);
                }
            } else {
                requireUnclaimed(request.volumeId(), attachment);
            }
            records.save(record.setPhase(StagePhase.STAGED).build());
            CrashPoints.reach(CrashPoint.STAGE_STAGED);
            LogContext.outcome(LOG, () -> "staged volume " + request.volumeId() + " (" + attachment.device() + ") at "
                    + staging);
        } catch (VolumeException failure) {
            if (noDeviceRecorded && isRefusal(failure)) {
                undoRefusedStage(request.volumeId(), failure);
            }
            throw failure;
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
            if (!found.get().getStagingPath().equals(staging.toString())) {
                throw VolumeException.precondition("volume " + request.volumeId() + " is staged at "
                        + found.get().getStagingPath() + ", not at " + staging + "; nothing was unstaged");
            }
            if (found.get().getPhase() == StagePhase.ATTACHING) {
                // Staging died inside the transport's attach: no device was recorded, nothing was mounted.
                abandonAttach(found.get());
                records.delete(request.volumeId());
                LogContext.outcome(LOG, () -> "unstaged volume " + request.volumeId() + ": undid its interrupted attach");
                return;
            }
            // A publication kubelet forgot, whose pod is gone, would refuse every unstage for ever: retired first.
            List<String> live = stalePublications.retire(found.get(), Publications.live(host, found.get()));
            if (!live.isEmpty()) {
                throw VolumeException.precondition("volume " + request.volumeId()
                        + " is still published at " + live + "; unpublish it first");
            }
            stalePublications.releaseUnboundViews(request.volumeId());
            StagingRecord record = found.get().toBuilder()
                    .setPhase(StagePhase.UNSTAGING).clearPublications().build();
            records.save(record);
            CrashPoints.reach(CrashPoint.UNSTAGE_RECORDED);
            DeviceNumber number = StagingRecords.deviceNumber(record);
            if (record.hasMount()) {
                unmountStagingPath(request.volumeId(), staging, number);
            }
            CrashPoints.reach(CrashPoint.UNSTAGE_UNMOUNTED);
            requireNotMountedElsewhere(request.volumeId(), number);
            flush(record);
            StagingRecords.transportOf(transports, record).detach(StagingRecords.attachment(record));
            CrashPoints.reach(CrashPoint.UNSTAGE_DETACHED);
            records.delete(request.volumeId());
            LogContext.outcome(LOG, () -> "unstaged volume " + request.volumeId() + " from " + staging);
        }
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
     * made stays on the device, where the retry's probe finds it. The caller still gets the refusal; a failed
     * undo is added to it and logged.
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

    private void undoAttachAndForget(StagingRecord left) throws VolumeException {
        try {
            abandonAttach(left);
        } catch (VolumeException undoFailed) {
            // Kept as after a crash inside the attach: unstage and the start-up recovery undo an attach with
            // these contexts, and a retry is bound by nothing of the refused request.
            records.save(left.toBuilder().setPhase(StagePhase.ATTACHING).clearDevice().clearAttachment().build());
            throw undoFailed;
        }
        records.delete(left.getVolumeId());
    }

    /** The recorded attach and the requested one name the same device (see {@link #differingDeviceKeys}). */
    private static boolean sameAttach(StagingRecord recorded, Transport transport, AttachRequest request) {
        return recorded.getTransport().equals(transport.name()) && differingDeviceKeys(recorded, request).isEmpty();
    }

    /**
     * A volume whose device is recorded (attached, maybe mounted and published) is not re-staged from
     * another one: that would say OK while the staging path still holds the first device, or leave the
     * first one attached under a record that forgot it. Only the key names are echoed, never values.
     */
    private static void requireSameDevice(StagingRecord recorded, Transport transport, AttachRequest request)
            throws VolumeException {
        String staged = "volume " + recorded.getVolumeId() + " is already staged at " + recorded.getStagingPath()
                + " from device " + recorded.getDevice().getPath() + " (transport " + recorded.getTransport() + ")";
        if (!recorded.getTransport().equals(transport.name())) {
            throw VolumeException.alreadyExists(staged + "; the request names a device of transport "
                    + transport.name() + "; unstage it first");
        }
        List<String> differing = differingDeviceKeys(recorded, request);
        if (!differing.isEmpty()) {
            throw VolumeException.alreadyExists(staged + "; the request names another device: the contexts' "
                    + differing + " differ from those it was staged with; unstage it first");
        }
    }

    /**
     * The context keys whose value differs between the recorded attach and the request, each read as a
     * transport reads it (publish_context over volume_context, a blank value as absent): a key moving from
     * one context to the other with the same value names the same device. The "transport" key is left out:
     * the transport it selects is compared by name.
     */
    private static List<String> differingDeviceKeys(StagingRecord recorded, AttachRequest request) {
        AttachRequest was = StagingRecords.attachRequest(recorded);
        SortedSet<String> keys = new TreeSet<>();
        for (AttachRequest contexts : List.of(was, request)) {
            keys.addAll(contexts.volumeContext().keySet());
            keys.addAll(contexts.publishContext().keySet());
        }
        keys.remove(Transports.TRANSPORT_KEY);
        return keys.stream().filter(key -> !was.key(key).equals(request.key(key))).toList();
    }

    private Optional<FilesystemType> requestedFilesystem(VolumeCapability capability) throws VolumeException {
        if (!(capability.accessType() instanceof AccessType.Mount mount) || mount.fsType().isEmpty()) {
            return Optional.empty();
        }
        Optional<FilesystemType> type = FilesystemType.byName(mount.fsType());
        if (type.isEmpty()) {
            throw VolumeException.invalid("volume_capability.mount.fs_type \"" + mount.fsType()
                    + "\" is not supported; supported: ext4, xfs");
        }
        return type;
    }

    /**
     * The request must agree with what the record binds. Once the volume was staged (or its filesystem is
     * mounted at the staging path), that is the whole capability; before, the record promised nothing
     * (a crash stopped the attempt short of the mount) except the type of a filesystem this plugin made,
     * which is a fact of the device.
     */
    private static void requireCompatible(StagingRecord record, VolumeCapability capability,
                                          Optional<FilesystemType> requestedFs, boolean capabilityBinds)
            throws VolumeException {
        if (!capabilityBinds) {
            if (record.hasMount() && record.getMount().getFormattedHere()) {
                requireSameFilesystem(record, requestedFs);
            }
            return;
        }
        String volume = record.getVolumeId();
        if (record.hasBlock() != capability.isBlock()) {
            throw VolumeException.alreadyExists("volume " + volume + " is already staged for "
                    + (record.hasBlock() ? "block" : "filesystem") + " access, the request asks for "
                    + (capability.isBlock() ? "block" : "filesystem") + " access");
        }
        if (!record.getAccessMode().equals(capability.accessMode().name())) {
            throw VolumeException.alreadyExists("volume " + volume + " is already staged with access mode "
                    + record.getAccessMode() + ", the request asks for " + capability.accessMode());
        }
        if (capability.accessType() instanceof AccessType.Mount mount) {
            requireSameFilesystem(record, requestedFs);
            if (!record.getMount().getMountFlagsList().equals(mount.mountFlags())) {
                throw VolumeException.alreadyExists("volume " + volume + " is already staged with mount flags "
                        + record.getMount().getMountFlagsList() + ", the request asks for " + mount.mountFlags());
            }
        }
    }

    private static void requireSameFilesystem(StagingRecord record, Optional<FilesystemType> requestedFs)
            throws VolumeException {
        String stagedFs = record.getMount().getFsType();
        if (requestedFs.isPresent() && !stagedFs.isEmpty() && !stagedFs.equals(requestedFs.get().kernelName())) {
            throw VolumeException.alreadyExists("volume " + record.getVolumeId() + " is already staged as " + stagedFs
                    + ", the request asks for " + requestedFs.get().kernelName());
        }
    }

    /** Whether the record's capability binds a retry (see {@link #requireCompatible}). */
    private boolean capabilityBinds(StagingRecord record, Path staging) throws VolumeException {
        return record.getPhase() == StagePhase.STAGED
                || (record.hasMount() && holdsMountOf(staging, StagingRecords.deviceNumber(record)));
    }

    /** True when what the record says is staged is really in place (after a restart, it may not be). */
    private boolean stillStaged(StagingRecord record, Path staging) throws VolumeException {
        DeviceNumber number = StagingRecords.deviceNumber(record);
        if (!host.blockDevices().exists(number)) {
            return false;
        }
        return record.hasBlock() || holdsMountOf(staging, number);
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
            for (MountEntry entry : host.mounter().table()) {
                if (entry.device().equals(attachment.number())) {
                    users.add("mounted at " + entry.mountPoint());
                }
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

    private void mountFilesystem(Requests.Stage request, Path staging, Attachment attachment,
                                 AccessType.Mount mount, Optional<FilesystemType> requestedFs,
                                 StagingRecord.Builder record) throws VolumeException {
        Path device = attachment.device();
        FilesystemType type = prepareFilesystem(request.volumeId(), device, requestedFs, record);
        MountOptions options = mount.options();
        if (request.capability().accessMode().readOnly()) {
            options = options.withReadOnly();
        }
        try (OpenedPath directory = paths.openDirectoryCreating("staging_target_path", staging)) {
            MountOptions finalOptions = options;
            Phases.run("mount", () -> host.mounter().mount(device, directory.viaDescriptor(), type.kernelName(),
                    finalOptions));
        } catch (NativeIOException e) {
            if ("EINVAL".equals(e.errnoName()) && !options.data().isEmpty()) {
                throw VolumeException.invalid("mounting " + device + " (" + type.kernelName() + ") at " + staging
                        + " with options " + options.data() + " failed with EINVAL: check volume_capability.mount"
                        + ".mount_flags (" + e.getMessage() + ")");
            }
            throw VolumeException.internal("mounting " + device + " (" + type.kernelName() + ") at " + staging
                    + " failed", e);
        } catch (IOException e) {
            throw VolumeException.internal("mounting " + device + " at " + staging + " failed", e);
        }
    }

    /**
     * The filesystem an earlier attempt began to create on this same device and did not finish (its
     * record says formatting started and never that it was done): carried into the new record, so that
     * the format is finished however many times staging is interrupted. Another device (a retry that
     * attached something else) carries nothing.
     */
    private static Optional<String> interruptedFormat(Optional<StagingRecord> existing, Attachment attachment) {
        return existing.filter(StagingRecord::hasMount)
                .filter(r -> !r.getMount().getFormattingStarted().isEmpty() && !r.getMount().getFormattedHere())
                .filter(r -> r.getDevice().getIdentity().equals(attachment.identity())
                        && StagingRecords.deviceNumber(r).equals(attachment.number()))
                .map(r -> r.getMount().getFormattingStarted());
    }

    /**
     * Formats a blank device; accepts a matching filesystem; refuses everything else. The one exception:
     * a device whose record says this plugin began formatting it (when it was blank) and never finished
     * holds only what that mkfs wrote, and is formatted again, forcibly.
     */
    private FilesystemType prepareFilesystem(String volumeId, Path device, Optional<FilesystemType> requested,
                                             StagingRecord.Builder record) throws VolumeException {
        if (!record.getMount().getFormattingStarted().isEmpty() && !record.getMount().getFormattedHere()) {
            return finishInterruptedFormat(volumeId, device, requested, record);
        }
        DeviceContent content;
        try {
            content = probe.probe(device);
        } catch (IOException e) {
            throw VolumeException.internal("cannot probe device " + device + " of volume " + volumeId, e);
        }
        FilesystemType type;
        boolean formatted = false;
        switch (content) {
            case DeviceContent.Blank blank -> {
                type = requested.orElse(defaultFilesystem);
                // Durably, before mkfs writes a byte: what it leaves if it is cut short is ours to overwrite.
                record.getMountBuilder().setFormattingStarted(type.kernelName());
                records.save(record.build());
                runMkfs(volumeId, device, type, type.format(device));
                formatted = true;
                CrashPoints.reach(CrashPoint.STAGE_FORMATTED);
                LOG.info(() -> "formatted blank device " + device + " of volume " + volumeId + " as "
                        + type.kernelName());
            }
            case DeviceContent.Filesystem fs -> {
                Optional<FilesystemType> found = FilesystemType.byName(fs.type());
                if (found.isEmpty()) {
                    throw VolumeException.precondition("device " + device + " of volume " + volumeId + " holds "
                            + content.describe() + ", which blocknode does not mount (ext4, xfs)");
                }
                if (requested.isPresent() && requested.get() != found.get()) {
                    throw VolumeException.precondition("device " + device + " of volume " + volumeId + " holds "
                            + content.describe() + " but the request asks for " + requested.get().kernelName()
                            + "; refusing to reformat a device that holds data");
                }
                type = found.get();
            }
            default -> throw VolumeException.precondition("device " + device + " of volume " + volumeId + " holds "
                    + content.describe() + "; blocknode never formats or mounts over existing data");
        }
        record.setMount(record.getMount().toBuilder().setFsType(type.kernelName()).setFormattedHere(formatted));
        records.save(record.build());
        return type;
    }

    private FilesystemType finishInterruptedFormat(String volumeId, Path device, Optional<FilesystemType> requested,
                                                   StagingRecord.Builder record) throws VolumeException {
        String started = record.getMount().getFormattingStarted();
        // The retry's own fs_type wins: nothing of the first attempt's choice was ever used.
        FilesystemType type = requested.or(() -> FilesystemType.byName(started)).orElseThrow(() ->
                VolumeException.internal("the staging record of volume " + volumeId + " says formatting as \""
                        + started + "\" started, a filesystem this plugin does not make", null));
        LOG.warning(() -> "device " + device + " of volume " + volumeId + ": formatting it as " + type.kernelName()
                + " was interrupted (the plugin stopped, or mkfs failed, before it was recorded as done); the"
                + " device was blank before that mkfs, so it is formatted again");
        runMkfs(volumeId, device, type, type.formatOverInterruptedFormat(device));
        CrashPoints.reach(CrashPoint.STAGE_FORMATTED);
        record.setMount(record.getMount().toBuilder().setFsType(type.kernelName())
                .setFormattingStarted(type.kernelName()).setFormattedHere(true));
        records.save(record.build());
        return type;
    }

    private void runMkfs(String volumeId, Path device, FilesystemType type, Command mkfs) throws VolumeException {
        try {
            Phases.run("mkfs", () -> host.commands().runChecked(mkfs.withTimeout(java.time.Duration.ofMinutes(5))));
        } catch (CommandException e) {
            throw VolumeException.internal("formatting " + device + " of volume " + volumeId + " as "
                    + type.kernelName() + " failed", e);
        }
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
            List<MountEntry> users = host.mounter().table().stream()
                    .filter(e -> e.device().equals(number)
                            || (name.isPresent() && e.fsType().equals("devtmpfs") && e.root().equals("/" + name.get())))
                    .toList();
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
