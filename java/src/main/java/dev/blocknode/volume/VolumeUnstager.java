package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.logging.LogContext;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.NoSuchPathException;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Transport;
import dev.blocknode.volume.record.Publications;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.Requests;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * NodeUnstageVolume: the reverse of a stage, refusing to report success while anything of the volume is left. A
 * volume without a record is looked for on the node ({@link StagingRecordRebuilder}); one whose stage died inside
 * its attach has that attach undone.
 */
final class VolumeUnstager {

    // The unstage's lines keep the logger operators know them by (docs/reference/log-format.md).
    private static final Logger LOG = Logger.getLogger(VolumeStager.class.getName());

    private final NodeParts node;
    private final DeviceSteps steps;
    private final OperationGuard guard;
    private final StalePublications stalePublications;
    private final RefusedStageUndo undo;
    private final StagingRecordRebuilder rebuilder;

    VolumeUnstager(NodeParts node, DeviceSteps steps, OperationGuard guard, StalePublications stalePublications,
                   RefusedStageUndo undo) {
        this.node = node;
        this.steps = steps;
        this.guard = guard;
        this.stalePublications = stalePublications;
        this.undo = undo;
        this.rebuilder = new StagingRecordRebuilder(node.host(), node.paths(), node.records(), node.transports(),
                steps.fences().nodeKey(), steps.claims());
    }

    void unstage(Requests.Unstage request) throws VolumeException {
        Path staging = node.paths().confine("staging_target_path", request.stagingPath());
        try (OperationGuard.Permit ignored = guard.enter(request.volumeId(), "NodeUnstageVolume")) {
            Optional<StagingRecord> found = node.records().find(request.volumeId());
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
                undo.abandonAttach(record);
                node.records().delete(request.volumeId());
                LogContext.outcome(LOG, () -> "unstaged volume " + request.volumeId() + ": undid its interrupted attach");
                return;
            }
            steps.claims().requireOwned(record);
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
        List<String> live = stalePublications.retire(record, Publications.live(node.host(), record));
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
        node.records().save(record);
        CrashPoints.reach(CrashPoint.UNSTAGE_RECORDED);
        DeviceNumber number = StagingRecords.usedNumber(record);
        // The numbers of a record of an earlier boot name nothing of this volume's: what is mounted or held at them
        // now is another device's, never unmounted, waited for or flushed on this volume's behalf. (Nothing of the
        // volume was mounted in this boot: a stage records this boot's id with the device before it mounts.)
        boolean numbersOfThisBoot = !node.records().ofEarlierBoot(record);
        if (record.hasMount() && numbersOfThisBoot) {
            unmountStagingPath(record.getVolumeId(), staging, number);
        }
        CrashPoints.reach(CrashPoint.UNSTAGE_UNMOUNTED);
        if (numbersOfThisBoot) {
            requireNotMountedElsewhere(record.getVolumeId(), number);
            // A filesystem of ours never mounted (its stage failed, or was cut short, before the mount): the device is
            // left blank, as its stage found it, for whatever the next stage of it asks. Before the mapping closes.
            steps.unmountedFormat().takeOff(record.getVolumeId(), StagingRecords.usedPath(record), record.toBuilder(),
                    "unstaged before its first mount");
        }
        // after the unmount, before the attached device the mapping holds is flushed and detached
        if (steps.encryption().close(record)) {
            CrashPoints.reach(CrashPoint.UNSTAGE_CRYPT_CLOSED);
        }
        if (numbersOfThisBoot) {
            flush(record);
        }
        steps.fences().release(record);
        detach(record, numbersOfThisBoot);
        CrashPoints.reach(CrashPoint.UNSTAGE_DETACHED);
        node.records().delete(record.getVolumeId());
    }

    private void detach(StagingRecord record, boolean numbersOfThisBoot) throws VolumeException {
        Transport transport = StagingRecords.transportOf(node.transports(), record);
        if (numbersOfThisBoot) {
            transport.detach(StagingRecords.attachment(record));
        } else {
            // What the recorded attach made died with its boot, and a detach goes partly by the recorded number
            // (NVMe/TCP: which volumes use a controller). What the same contexts may have brought back since (a
            // login at boot) is undone as after an interrupted attach: found by the contexts, used by nobody else.
            transport.abandon(StagingRecords.attachRequest(record));
        }
    }

    /** Unmounts the volume's filesystem at the staging path, by name in its opened directory, following nothing. */
    private void unmountStagingPath(String volumeId, Path staging, DeviceNumber number) throws VolumeException {
        Optional<OpenedPath> parent = node.paths().openParentIfPresent("staging_target_path", staging);
        if (parent.isEmpty()) {
            return;
        }
        Host host = node.host();
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
            Optional<String> name = node.host().blockDevices().kernelName(number);
            List<MountEntry> users = node.host().mounter().mountsWhere(e -> e.device().equals(number)
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
            Optional<Path> device = node.host().blockDevices().nodeFor(number);
            if (device.isPresent()) {
                Phases.run("flush", () -> node.host().blockDevices().flush(device.get()));
            }
        } catch (IOException e) {
            if (BlockDevices.refusedByReservation(e)) {
                // Fenced out: another node holds the volume at the storage. Refusing the unstage would leave the
                // volume on this node for ever, and nothing of it can be written from here any more.
                LOG.warning(() -> "volume " + record.getVolumeId() + ": device " + record.getDevice().getPath()
                        + " (" + number + ") cannot be flushed, the storage refuses this node's writes under another"
                        + " node's reservation (" + e.getMessage() + "); what this node had not written back is"
                        + " lost, as fencing intends; unstaging it");
                return;
            }
            throw VolumeException.internal("flushing device " + record.getDevice().getPath() + " (" + number
                    + ") of volume " + record.getVolumeId() + " failed", e);
        }
    }
}
