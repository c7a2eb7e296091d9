package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.logging.LogContext;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.Publications;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * NodePublishVolume and NodeUnpublishVolume: bind the staged filesystem (or the device node, for block
 * access) into a pod's target path, and take it away again. The publication is recorded before the
 * bind, so a crash in between leaves nothing that unpublish cannot find.
 */
public final class VolumePublisher {

    private static final Logger LOG = Logger.getLogger(VolumePublisher.class.getName());
    private static final int MAX_STACKED_UNMOUNTS = 8;

    private final Host host;
    private final KubeletPaths paths;
    private final StagingRecords records;
    private final OperationGuard guard;
    private final ReadOnlyViews views;

    VolumePublisher(Host host, KubeletPaths paths, StagingRecords records, OperationGuard guard) {
        this.host = host;
        this.views = new ReadOnlyViews(host, records);
        this.paths = paths;
        this.records = records;
        this.guard = guard;
    }

    public void publish(Requests.Publish request) throws VolumeException {
        Path target = paths.confine("target_path", request.targetPath());
        Path staging = paths.confine("staging_target_path", request.stagingPath());
        String volumeId = request.volumeId();
        try (OperationGuard.Permit ignored = guard.enter(volumeId, "NodePublishVolume")) {
            StagingRecord record = stagedFor(request, staging);
            SelinuxMountContexts.requirePublishable(record, request.capability());
            boolean readOnly = request.readonly() || request.capability().accessMode().readOnly();
            List<String> flags = request.capability().accessType() instanceof AccessType.Mount mount
                    ? mount.mountFlags() : List.of();
            PublicationRecord wanted = PublicationRecord.newBuilder()
                    .setReadonly(readOnly)
                    .addAllMountFlags(flags)
                    .setAccessMode(request.capability().accessMode().name())
                    .build();
            Optional<OpenedPath> existingParent = paths.openParentIfPresent("target_path", target);
            try (OpenedPath parent = existingParent.isPresent() ? existingParent.get()
                    : paths.openParentCreating("target_path", target)) {
                Target at = new Target(parent, target.getFileName().toString(), target);
                if (alreadyPublished(record, at, wanted)) {
                    return;
                }
                publishAt(request, record, staging, at, wanted);
            } catch (IOException e) {
                throw VolumeException.internal("cannot close target path " + target, e);
            }
            CrashPoints.reach(CrashPoint.PUBLISH_BOUND);
            LogContext.outcome(LOG, () -> "published volume " + volumeId + " at " + target
                    + (readOnly ? " (read-only)" : ""));
        }
    }

    /** The target path, as the name {@code name} in its opened directory {@code parent}. */
    private record Target(OpenedPath parent, String name, Path path) {
    }

    /**
     * The volume's record, when the volume is staged, in this boot, at {@code staging}, for the access the request
     * asks for; FAILED_PRECONDITION naming what is not so.
     */
    private StagingRecord stagedFor(Requests.Publish request, Path staging) throws VolumeException {
        String volumeId = request.volumeId();
        StagingRecord record = records.find(volumeId).orElseThrow(() -> VolumeException.precondition(
                "volume " + volumeId + " is not staged on this node; NodeStageVolume must come first"));
        if (record.getPhase() != StagePhase.STAGED) {
            throw VolumeException.precondition("volume " + volumeId + " is not fully staged (phase "
                    + record.getPhase() + "); NodeStageVolume must complete first");
        }
        if (records.ofEarlierBoot(record)) {
            // Its device number is of that boot: a raw block publish would bind whatever has it now.
            throw VolumeException.precondition("volume " + volumeId + " was staged in an earlier boot of the"
                    + " node; NodeStageVolume must stage it again first");
        }
        if (!record.getStagingPath().equals(staging.toString())) {
            throw VolumeException.precondition("volume " + volumeId + " is staged at " + record.getStagingPath()
                    + ", not at " + staging);
        }
        if (record.hasBlock() != request.capability().isBlock()) {
            throw VolumeException.precondition("volume " + volumeId + " is staged for "
                    + (record.hasBlock() ? "block" : "filesystem") + " access; the request asks for "
                    + (request.capability().isBlock() ? "block" : "filesystem") + " access");
        }
        return record;
    }

    /** The publication recorded, then bound: the device (or its read-only view), or the staged filesystem. */
    private void publishAt(Requests.Publish request, StagingRecord record, Path staging, Target at,
                           PublicationRecord wanted) throws VolumeException {
        Path target = at.path();
        requireSingleWriterRespected(record, target, request.capability().accessMode());

        PublicationRecord earlier = record.getPublicationsMap().get(target.toString());
        if (earlier != null && earlier.hasReadonlyView()) {
            // An earlier attempt died before binding its view at the target: release it, a new one follows.
            views.release(request.volumeId(), record, earlier.getReadonlyView());
        }
        StagingRecord.Builder updated = record.toBuilder().putPublications(target.toString(), wanted);
        records.savePublications(updated.build());
        CrashPoints.reach(CrashPoint.PUBLISH_RECORDED);
        MountOptions options = request.capability().accessType() instanceof AccessType.Mount mount
                ? mount.options().perMountPoint() : MountOptions.NONE;
        if (wanted.getReadonly()) {
            options = options.withReadOnly();
        }
        if (record.hasBlock()) {
            Path device = wanted.getReadonly() ? views.make(updated, target, wanted) : StagingRecords.usedPath(record);
            bindDevice(at, device, options);
        } else {
            bindStagedFilesystem(record, staging, at, options);
        }
    }

    public void unpublish(Requests.Unpublish request) throws VolumeException {
        Path target = paths.confine("target_path", request.targetPath());
        String volumeId = request.volumeId();
        try (OperationGuard.Permit ignored = guard.enter(volumeId, "NodeUnpublishVolume")) {
            takeDown(volumeId, target);
            LogContext.outcome(LOG, () -> "unpublished volume " + volumeId + " from " + target);
        }
    }

    /**
     * What NodeUnpublishVolume does once it holds the volume: unmounts what of the volume is at the target (and
     * only that), removes the target, releases a read-only view, drops the publication from the record. Also how
     * a publication whose pod is gone is retired ({@link StalePublications}), so that it is taken down exactly as
     * unpublish would. The caller holds the volume's permit.
     *
     * @param target a path as {@link KubeletPaths#confine} returned it
     */
    void takeDown(String volumeId, Path target) throws VolumeException {
        Optional<StagingRecord> record = records.find(volumeId);
        Optional<OpenedPath> parent = paths.openParentIfPresent("target_path", target);
        if (parent.isPresent()) {
            try (OpenedPath directory = parent.get()) {
                String name = target.getFileName().toString();
                Optional<FileStat> left = unmountTarget(volumeId, directory, name, target, record);
                if (left.isPresent()) {
                    CrashPoints.reach(CrashPoint.UNPUBLISH_UNMOUNTED);
                    TargetPaths.delete(volumeId, directory, name, target, left.get());
                }
            } catch (IOException e) {
                throw VolumeException.internal("cannot close the directory of target path " + target, e);
            }
        }
        Optional<PublicationRecord> publication =
                record.map(r -> r.getPublicationsMap().get(target.toString()));
        if (publication.isPresent() && publication.get().hasReadonlyView()) {
            views.release(volumeId, record.get(), publication.get().getReadonlyView());
            CrashPoints.reach(CrashPoint.UNPUBLISH_VIEW_RELEASED);
        }
        if (record.isPresent() && record.get().containsPublications(target.toString())) {
            records.savePublications(record.get().toBuilder().removePublications(target.toString()).build());
        }
    }

    /**
     * True when the target already holds this volume with the same arguments (a retry: nothing to do).
     *
     * @throws VolumeException ALREADY_EXISTS when it holds something else, or this volume differently
     */
    private boolean alreadyPublished(StagingRecord record, Target at, PublicationRecord wanted)
            throws VolumeException {
        OpenedPath parent = at.parent();
        String name = at.name();
        Path target = at.path();
        try {
            Optional<FileStat> stat = parent.statChild(name);
            if (stat.isEmpty() || !Publications.isMountRoot(parent, stat.get())) {
                return false;
            }
            if (!Publications.holdsVolume(record, target, stat.get())) {
                throw VolumeException.alreadyExists("target path " + target + " already holds a mount of another"
                        + " volume or device");
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot inspect target path " + target, e);
        }
        PublicationRecord published = record.getPublicationsMap().get(target.toString());
        if (published == null) {
            throw VolumeException.alreadyExists("target path " + target + " already holds volume "
                    + record.getVolumeId() + ", mounted by an earlier run with arguments that were not recorded");
        }
        if (!published.toBuilder().clearReadonlyView().build().equals(wanted)) {
            throw VolumeException.alreadyExists("volume " + record.getVolumeId() + " is already published at "
                    + target + " with " + describe(published) + "; the request asks for " + describe(wanted));
        }
        return true;
    }

    private void requireSingleWriterRespected(StagingRecord record, Path target, AccessMode mode)
            throws VolumeException {
        for (String other : Publications.live(host, record)) {
            if (other.equals(target.toString())) {
                continue;
            }
            PublicationRecord existing = record.getPublicationsMap().get(other);
            boolean otherIsSingle = existing != null
                    && existing.getAccessMode().equals(AccessMode.SINGLE_NODE_SINGLE_WRITER.name());
            if (mode.singlePublication() || otherIsSingle) {
                throw VolumeException.precondition("volume " + record.getVolumeId() + " is already published at "
                        + other + " and its access mode " + AccessMode.SINGLE_NODE_SINGLE_WRITER
                        + " allows one publication only");
            }
        }
    }

    /**
     * Binds the volume's staged filesystem at the directory {@code name} of {@code parent}, creating it, with the
     * publication's per-mount-point flags from the start (see {@link dev.blocknode.os.mount.Mounter#bind}: the
     * host's copy of the bind has them too). The staging path is opened and checked to be the volume's mount
     * first, and both ends are used by descriptor.
     */
    private void bindStagedFilesystem(StagingRecord record, Path staging, Target at, MountOptions options)
            throws VolumeException {
        Path target = at.path();
        Optional<OpenedPath> opened = paths.openIfPresent("staging_target_path", staging);
        try (OpenedPath source = opened.orElseThrow(() -> VolumeException.precondition("staging path " + staging
                + " of volume " + record.getVolumeId() + " is gone; NodeStageVolume must stage it again"))) {
            FileStat staged = source.stat();
            if (staged.isSymlink()) {
                throw KubeletPaths.symlinkRefused("staging_target_path", staging);
            }
            if (!staged.isDirectory() || staged.mountRoot() == FileStat.MountRoot.NO
                    || !staged.device().equals(StagingRecords.usedNumber(record))) {
                throw VolumeException.precondition("staging path " + staging + " does not hold volume "
                        + record.getVolumeId() + "'s filesystem; NodeStageVolume must stage it again");
            }
            try (OpenedPath mountPoint = TargetPaths.openDirectory(at.parent(), at.name(), target)) {
                host.mounter().bind(source.viaDescriptor(), mountPoint.viaDescriptor(), options);
            }
        } catch (IOException e) {
            throw VolumeException.internal("bind-mounting " + staging + " at " + target
                    + (options.readOnly() ? " read-only" : "") + " for volume " + record.getVolumeId() + " failed", e);
        }
    }

    /**
     * Binds the device node {@code device} onto the file {@code name} of {@code parent}, creating it, with the
     * publication's flags from the start (read-only for a read-only view).
     */
    private void bindDevice(Target at, Path device, MountOptions options) throws VolumeException {
        Path target = at.path();
        try (OpenedPath file = TargetPaths.openFile(at.parent(), at.name(), target)) {
            host.mounter().bind(device, file.viaDescriptor(), options);
        } catch (IOException e) {
            throw VolumeException.internal("bind-mounting " + device + " at " + target
                    + (options.readOnly() ? " read-only" : "") + " failed", e);
        }
    }

    /**
     * Unmounts whatever of this volume is mounted at the target (stacked mounts too, up to a bound), by name
     * in the target's opened directory, following nothing; one statx per mount tells whether it is a mount
     * point and whose. Returns the statx of what is left at the target, empty when nothing is.
     */
    private Optional<FileStat> unmountTarget(String volumeId, OpenedPath directory, String name, Path target,
                                             Optional<StagingRecord> record) throws VolumeException {
        try {
            for (int unmounts = 0; ; unmounts++) {
                Optional<FileStat> stat = directory.statChild(name);
                if (stat.isEmpty() || !Publications.isMountRoot(directory, stat.get())) {
                    return stat;
                }
                if (unmounts == MAX_STACKED_UNMOUNTS) {
                    throw VolumeException.internal("target path " + target + " is still a mount point after "
                            + MAX_STACKED_UNMOUNTS + " unmounts", null);
                }
                requirePublicationOf(volumeId, target, record, stat.get());
                host.mounter().unmount(directory.childViaDescriptor(name));
            }
        } catch (IOException e) {
            throw VolumeException.internal("unmounting " + target + " of volume " + volumeId + " failed", e);
        }
    }

    /**
     * Unpublish takes away a publication of the volume it names and nothing else: never its staging mount,
     * never another volume's mount. Without a record of the volume (a lost state dir), a mount that no other
     * volume's record claims is taken to be its publication, so that a teardown still completes.
     */
    private void requirePublicationOf(String volumeId, Path target, Optional<StagingRecord> record, FileStat stat)
            throws VolumeException {
        if (record.isPresent()) {
            if (record.get().getStagingPath().equals(target.toString())) {
                throw VolumeException.precondition("target path " + target + " is the staging path of volume "
                        + volumeId + ", not a publication; NodeUnstageVolume takes it down; left it alone");
            }
            if (!Publications.holdsVolume(record.get(), target, stat)) {
                throw VolumeException.precondition("target path " + target + " holds a mount that is not volume "
                        + volumeId + "; left it alone");
            }
            return;
        }
        Optional<StagingRecord> other = records.otherVolumeAt(volumeId, target, stat);
        if (other.isPresent()) {
            throw VolumeException.precondition("target path " + target + " holds volume "
                    + other.get().getVolumeId() + ", not volume " + volumeId + "; left it alone");
        }
    }

    private static String describe(PublicationRecord publication) {
        return Map.of("readonly", publication.getReadonly(), "mount_flags", publication.getMountFlagsList(),
                "access_mode", publication.getAccessMode()).toString();
    }
}
