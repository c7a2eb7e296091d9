package dev.blocknode.volume;

import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.nio.file.Path;
import java.util.logging.Logger;

/**
 * A filesystem this plugin made on a blank device and that was never mounted (the record's awaiting_first_mount):
 * nothing but mkfs has written it, so it is the plugin's to take off again. When its first mount fails (the kernel
 * refusing what the volume's mkfsOptions made, or one of its mount flags), or its volume is unstaged before any
 * mount, the device is left blank, as the stage found it: a corrected stage formats it afresh, where it would
 * otherwise find a filesystem it cannot mount, or "data" it must not format over, for ever.
 */
final class UnmountedFormat {

    private static final Logger LOG = Logger.getLogger(UnmountedFormat.class.getName());

    private final Host host;
    private final StagingRecords records;
    private final FilesystemPreparer filesystems;

    UnmountedFormat(Host host, StagingRecords records, FilesystemPreparer filesystems) {
        this.host = host;
        this.records = records;
        this.filesystems = filesystems;
    }

    /** True when the record's filesystem is this plugin's own and was never mounted. */
    static boolean awaitsFirstMount(StagingRecord.Builder record) {
        return record.hasMount() && record.getMount().getFormattedHere() && record.getMount().getAwaitingFirstMount();
    }

    /**
     * Takes the format off {@code device} (where the filesystem lives: the attached device, or an encrypted volume's
     * opened mapping), when it awaits its first mount; does nothing otherwise. The record first says an interrupted
     * format of ours is on the device, so that a crash inside the wipe leaves what the retry blanks again; then the
     * head is zeroed, and the record says no format is under way. A device that something else on the node holds
     * keeps its filesystem, and the caller gets FAILED_PRECONDITION: nothing is written under a holder.
     *
     * @return true when the format was taken off
     */
    boolean takeOff(String volumeId, Path device, StagingRecord.Builder record, String why) throws VolumeException {
        if (!awaitsFirstMount(record)) {
            return false;
        }
        String type = record.getMount().getFsType();
        try {
            if (host.blockDevices().isClaimed(device)) {
                throw VolumeException.precondition("device " + device + " of volume " + volumeId + " is in use on"
                        + " this node; the " + type + " filesystem this plugin made on it (never mounted) is left on it");
            }
        } catch (IOException e) {
            throw VolumeException.internal("cannot tell whether device " + device + " is in use", e);
        }
        record.setMount(record.getMount().toBuilder().setFormattedHere(false).setAwaitingFirstMount(false)
                .setFormattingStarted(type));
        records.save(record.build());
        filesystems.blank(volumeId, device, record);
        LOG.info(() -> "volume " + volumeId + ": " + why + "; the " + type + " filesystem this plugin made on device "
                + device + " was never mounted, and is taken off: the device is blank again");
        return true;
    }
}
