package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.block.LoopDevices;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Logger;

/**
 * The read-only loop device a read-only publication of a raw block volume binds instead of the volume's device: a
 * read-only bind mount of a device node does not stop writes through it; a read-only device does.
 */
final class ReadOnlyViews {

    // The publisher's lines keep the logger operators know them by (docs/reference/log-format.md).
    private static final Logger LOG = Logger.getLogger(VolumePublisher.class.getName());
    private static final ReentrantLock LOOP_ALLOCATION = new ReentrantLock();
    private static final int VIEW_ATTEMPTS = 3;

    private final Host host;
    private final StagingRecords records;
    private final LoopDevices loops;

    ReadOnlyViews(Host host, StagingRecords records) {
        this.host = host;
        this.records = records;
        this.loops = new LoopDevices(host.paths(), host.commands());
    }

    /**
     * A read-only loop device over the volume's device. The loop device is chosen and recorded in the publication
     * before it is bound, so that after a crash at any instant unpublish or a retry finds it by name and releases
     * it once it sees that it backs this volume's device.
     */
    Path make(StagingRecord.Builder record, Path target, PublicationRecord publication) throws VolumeException {
        Path device = StagingRecords.usedPath(record.build());
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
    void release(String volumeId, StagingRecord record, DeviceRecord view) throws VolumeException {
        DeviceNumber number = StagingRecords.deviceNumber(view);
        try {
            Optional<Path> backing = loops.backingFile(number);
            if (backing.isEmpty()) {
                return; // already detached
            }
            if (!backing.get().equals(StagingRecords.usedPath(record))) {
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
}
