package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.Host;
import dev.blocknode.os.block.LoopDevices;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.logging.LogContext;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NoSuchPathException;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;

import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Logger;

/**
 * NodePublishVolume and NodeUnpublishVolume: bind the staged filesystem (or the device node, for block
 * access) into a pod's target path, and take it away again. The publication is recorded before the
 * bind, so a crash in between leaves nothing that unpublish cannot find.
 */
public final class VolumePublisher {

    private static final Logger LOG = Logger.getLogger(VolumePublisher.class.getName());
    private static final int MAX_STACKED_UNMOUNTS = 8;
    private static final ReentrantLock LOOP_ALLOCATION = new ReentrantLock();
    private static final int VIEW_ATTEMPTS = 3;

    private final Host host;
    private final KubeletPaths paths;
    private final StagingRecords records;
    private final OperationGuard guard;
    private final LoopDevices loops;

    VolumePublisher(Host host, KubeletPaths paths, StagingRecords records, OperationGuard guard) {
        this.host = host;
        this.loops = new LoopDevices(host.paths(), host.commands());
        this.paths = paths;
        this.records = records;
        this.guard = guard;
    }

    public void publish(Requests.Publish request) throws VolumeException {
        Path target = paths.confine("target_path", request.targetPath());
        Path staging = paths.confine("staging_target_path", request.stagingPath());
        String volumeId = request.volumeId();
        try (OperationGuard.Permit ignored = guard.enter(volumeId, "NodePublishVolume")) {
            StagingRecord record = records.find(volumeId).orElseThrow(() -> VolumeException.precondition(
                    "volume " + volumeId + " is not staged on this node; NodeStageVolume must come first"));
            if (record.getPhase() != StagePhase.STAGED) {
                throw VolumeException.precondition("volume " + volumeId + " is not fully staged (phase "
                        + record.getPhase() + "); NodeStageVolume must complete first");
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
            boolean readOnly = request.readonly() || request.capability().accessMode().readOnly();
            List<String> flags = request.capability().accessType() instanceof AccessType.Mount mount
                    ? mount.mountFlags() : List.of();
            PublicationRecord wanted = PublicationRecord.newBuilder()
                    .setReadonly(readOnly)
                    .addAllMountFlags(flags)
                    .setAccessMode(request.capability().accessMode().name())
                    .build();
            if (alreadyPublished(record, target, wanted)) {
                return;
            }
            requireSingleWriterRespected(record, target, request.capability().accessMode());

            PublicationRecord earlier = record.getPublicationsMap().get(target.toString());
            if (earlier != null && earlier.hasReadonlyView()) {
                // An earlier attempt died before binding its view at the target: release it, a new one follows.
                releaseReadOnlyView(volumeId, record, earlier.getReadonlyView());
            }
            StagingRecord.Builder updated = record.toBuilder().putPublications(target.toString(), wanted);
            records.savePublications(updated.build());
            CrashPoints.reach(CrashPoint.PUBLISH_RECORDED);
            MountOptions options = request.capability().accessType() instanceof AccessType.Mount mount
                    ? mount.options().perMountPoint() : MountOptions.NONE;
            if (readOnly) {
                options = options.withFlags(LinuxNative.MS_RDONLY);
            }
            Path source = staging;
            if (record.hasBlock()) {
                source = readOnly ? readOnlyView(updated, target, wanted) : StagingRecords.devicePath(record);
            }
            createTarget(target, record.hasBlock());
            try {
                host.mounter().bind(source, target, options);
            } catch (IOException e) {
                throw VolumeException.internal("bind-mounting " + source + " at " + target + " for volume "
                        + volumeId + " failed", e);
            }
            CrashPoints.reach(CrashPoint.PUBLISH_BOUND);
            LogContext.outcome(LOG, () -> "published volume " + volumeId + " at " + target
                    + (readOnly ? " (read-only)" : ""));
        }
    }

    public void unpublish(Requests.Unpublish request) throws VolumeException {
        Path target = paths.confine("target_path", request.targetPath());
        String volumeId = request.volumeId();
        try (OperationGuard.Permit ignored = guard.enter(volumeId, "NodeUnpublishVolume")) {
            Optional<StagingRecord> record = records.find(volumeId);
            if (unmountTarget(volumeId, target, record)) {
                CrashPoints.reach(CrashPoint.UNPUBLISH_UNMOUNTED);
                deleteTarget(volumeId, target);
            }
            Optional<PublicationRecord> publication =
                    record.map(r -> r.getPublicationsMap().get(target.toString()));
            if (publication.isPresent() && publication.get().hasReadonlyView()) {
                releaseReadOnlyView(volumeId, record.get(), publication.get().getReadonlyView());
                CrashPoints.reach(CrashPoint.UNPUBLISH_VIEW_RELEASED);
            }
            if (record.isPresent() && record.get().containsPublications(target.toString())) {
                records.savePublications(record.get().toBuilder().removePublications(target.toString()).build());
            }
            LogContext.outcome(LOG, () -> "unpublished volume " + volumeId + " from " + target);
        }
    }

    /**
     * True when the target already holds this volume with the same arguments (a retry: nothing to do).
     *
     * @throws VolumeException ALREADY_EXISTS when it holds something else, or this volume differently
     */
    private boolean alreadyPublished(StagingRecord record, Path target, PublicationRecord wanted)
            throws VolumeException {
        try {
            Optional<FileStat> stat = statIfPresent(target);
            if (stat.isEmpty() || !Publications.isMountPoint(host, target, stat.get())) {
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

    /**
     * A read-only loop device over the volume's device. A read-only bind mount of a device node does not
     * stop writes through it; a read-only device does. The loop device is chosen and recorded in the
     * publication before it is bound, so that after a crash at any instant unpublish or a retry finds it
     * by name and releases it once it sees that it backs this volume's device.
     */
    private Path readOnlyView(StagingRecord.Builder record, Path target, PublicationRecord publication)
            throws VolumeException {
        Path device = Path.of(record.getDevice().getPath());
        LOOP_ALLOCATION.lock(); // two publications of this plugin must not choose the same free loop device
        try {
            for (int attempt = 1; ; attempt++) {
                Path view = loops.findUnused();
                FileStat stat = host.mounter().stat(view);
                record.putPublications(target.toString(), publication.toBuilder()
                        .setReadonlyView(DeviceRecord.newBuilder().setPath(view.toString())
                                .setMajor(stat.rdev().major()).setMinor(stat.rdev().minor()))
                        .build());
                records.savePublications(record.build());
                CrashPoints.reach(CrashPoint.PUBLISH_VIEW_RECORDED);
                try {
                    loops.attachReadOnly(view, device);
                } catch (CommandException e) {
                    // Another process may have bound the free device first: then choose again, a few times.
                    Optional<Path> taken = loops.backingFile(stat.rdev());
                    if (taken.isEmpty() || taken.get().equals(device) || attempt >= VIEW_ATTEMPTS) {
                        throw e;
                    }
                    LOG.info(() -> "loop device " + view + " was taken by another process; choosing another");
                    continue;
                }
                CrashPoints.reach(CrashPoint.PUBLISH_VIEW_ATTACHED);
                return view;
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot make a read-only view of " + device + " for " + target, e);
        } finally {
            LOOP_ALLOCATION.unlock();
        }
    }

    /** Detaches the read-only loop device of a publication, if it is still the one over our device. */
    private void releaseReadOnlyView(String volumeId, StagingRecord record, DeviceRecord view) throws VolumeException {
        DeviceNumber number = new DeviceNumber(view.getMajor(), view.getMinor());
        try {
            Optional<Path> backing = loops.backingFile(number);
            if (backing.isEmpty()) {
                return; // already detached
            }
            if (!backing.get().equals(Path.of(record.getDevice().getPath()))) {
                LOG.warning(() -> "loop device " + view.getPath() + " now backs " + backing.get() + ", not volume "
                        + volumeId + "'s device; leaving it alone");
                return;
            }
            loops.detach(Path.of(view.getPath()));
        } catch (IOException e) {
            throw VolumeException.internal("cannot detach the read-only view " + view.getPath() + " of volume "
                    + volumeId, e);
        }
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

    private void createTarget(Path target, boolean block) throws VolumeException {
        try {
            if (block) {
                if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                    Files.delete(target); // an empty directory left by an older kubelet: the device needs a file
                }
                Files.createDirectories(target.getParent());
                try {
                    Files.createFile(target);
                } catch (FileAlreadyExistsException exists) {
                    // a retry: the file is ours
                }
            } else {
                Files.createDirectories(target);
            }
        } catch (DirectoryNotEmptyException e) {
            throw VolumeException.precondition("target path " + target + " is a non-empty directory; a block "
                    + "volume needs a file there");
        } catch (FileAlreadyExistsException e) {
            throw VolumeException.precondition("target path " + target + " exists and is not a directory");
        } catch (IOException e) {
            throw VolumeException.internal("cannot create target path " + target, e);
        }
    }

    /**
     * Unmounts whatever of this volume is mounted at the target (stacked mounts too, up to a bound); one
     * statx per mount tells whether it is a mount point and whose. False when the target does not exist.
     */
    private boolean unmountTarget(String volumeId, Path target, Optional<StagingRecord> record)
            throws VolumeException {
        try {
            for (int unmounts = 0; ; unmounts++) {
                Optional<FileStat> stat = statIfPresent(target);
                if (stat.isEmpty()) {
                    return unmounts > 0;
                }
                if (!Publications.isMountPoint(host, target, stat.get())) {
                    return true;
                }
                if (unmounts == MAX_STACKED_UNMOUNTS) {
                    throw VolumeException.internal("target path " + target + " is still a mount point after "
                            + MAX_STACKED_UNMOUNTS + " unmounts", null);
                }
                if (record.isPresent() && !Publications.holdsVolume(record.get(), target, stat.get())) {
                    throw VolumeException.precondition("target path " + target + " holds a mount that is not volume "
                            + volumeId + "; left it alone");
                }
                host.mounter().unmount(target);
            }
        } catch (IOException e) {
            throw VolumeException.internal("unmounting " + target + " of volume " + volumeId + " failed", e);
        }
    }

    /** The target's statx, without following a symlink; empty when nothing is there. */
    private Optional<FileStat> statIfPresent(Path target) throws IOException {
        try {
            return Optional.of(host.mounter().stat(target));
        } catch (NoSuchPathException | NoSuchFileException absent) {
            return Optional.empty();
        }
    }

    /** The spec makes the plugin delete what it created at the target; a directory with data is never deleted. */
    private static void deleteTarget(String volumeId, Path target) throws VolumeException {
        try {
            Files.deleteIfExists(target);
        } catch (DirectoryNotEmptyException e) {
            throw VolumeException.precondition("target path " + target + " of volume " + volumeId
                    + " is not empty after unmounting; refusing to delete what is in it");
        } catch (IOException e) {
            throw VolumeException.internal("cannot remove target path " + target, e);
        }
    }

    private static String describe(PublicationRecord publication) {
        return Map.of("readonly", publication.getReadonly(), "mount_flags", publication.getMountFlagsList(),
                "access_mode", publication.getAccessMode()).toString();
    }
}
