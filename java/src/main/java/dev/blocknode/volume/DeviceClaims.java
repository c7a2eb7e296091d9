package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.DeviceIdentity;
import dev.blocknode.transport.KeyedLocks;
import dev.blocknode.volume.record.StagingRecords;

import java.nio.file.Path;
import java.util.Optional;

/**
 * One volume per device, and each volume's staging path and device its own. Two volume ids on one device
 * destroy each other's data (a filesystem "formatted on a blank device" over a raw block volume whose first
 * MiB was zeros), and the in-use check, an O_EXCL open, cannot see a raw block volume: it holds no mount and
 * no holder, only a bind of its device node. So what a staging record names is the claim: the stage asks,
 * right after the transport's attach and before anything touches the device, whether another volume's record
 * names the device; unstage asks whether another volume's record names its staging path or its device
 * before it unmounts, flushes or detaches anything.
 *
 * <p>A device is known by its number (major:minor), never by a path: a /dev/disk/by-id link, a second node
 * made with mknod and the volume's own name all lead to one number. Where both records know the device's
 * verified identity (a WWID) and the identities differ, the numbers are a coincidence (a record from before a
 * reboot whose number now belongs to another device): not the same device. Without an identity on either side
 * (a loop device, a local disk named without "wwid") the number is all there is, and it counts: refusing a
 * stage until a stale record is unstaged costs a retry, staging a second volume on a live one costs its data.
 * A record of an earlier boot ({@link StagingRecords#ofEarlierBoot}) holds no device by number: the kernel numbered
 * the devices afresh since, so its number says nothing about what is there now, and neither claims nor is claimed.
 *
 * <p>The stage holds {@link #lock} of the device's number from the question until its own record naming the
 * device is saved, so two stages of different volumes on one device (the per-volume {@link OperationGuard}
 * does not serialize them) cannot both find it free.
 */
final class DeviceClaims {

    /** The refusal of a stage whose device another volume holds: its attach is that volume's, never undone. */
    static final class HeldByAnotherVolume extends VolumeException {
        HeldByAnotherVolume(String message) {
            super(Outcome.FAILED_PRECONDITION, message);
        }
    }

    private final StagingRecords records;
    private final KeyedLocks<DeviceNumber> locks = new KeyedLocks<>();
    private final KeyedLocks<String> pathLocks = new KeyedLocks<>();

    DeviceClaims(StagingRecords records) {
        this.records = records;
    }

    /** Holds the device number, node-wide, until closed: from {@link #requireFree} until the record is saved. */
    KeyedLocks.Held lock(DeviceNumber number) {
        return locks.lock(number);
    }

    /** Holds a staging path, node-wide, until closed: from {@link #requirePathFree} until the intent is saved. */
    KeyedLocks.Held lockPath(Path staging) {
        return pathLocks.lock(staging.toString());
    }

    /**
     * The stage's first check, under {@link #lockPath}, before its intent is recorded: no other volume's record
     * (in any phase: an ATTACHING one names the path too) is staged or published at the staging path. Two records
     * at one staging path would each refuse the other's unstage ({@link #requireOwned}) for ever.
     *
     * @throws VolumeException ALREADY_EXISTS naming the other volume, as for another volume's mount found there
     */
    void requirePathFree(String volumeId, Path staging) throws VolumeException {
        Optional<StagingRecord> other = claimantOf(volumeId, staging);
        if (other.isPresent()) {
            boolean staged = other.get().getStagingPath().equals(staging.toString());
            throw VolumeException.alreadyExists("staging path " + staging + " of volume " + volumeId + " is volume "
                    + other.get().getVolumeId() + "'s " + (staged ? "staging path" : "publication")
                    + "; refusing to stage another volume there");
        }
    }

    /**
     * The stage's check, under {@link #lock}: no other volume's record names the attached device.
     *
     * @throws HeldByAnotherVolume FAILED_PRECONDITION naming the other volume and the device
     */
    void requireFree(String volumeId, Attachment attachment) throws VolumeException {
        Optional<StagingRecord> holder = holderOf(volumeId, attachment.number(), attachment.identity());
        if (holder.isPresent()) {
            StagingRecord other = holder.get();
            throw new HeldByAnotherVolume("device " + attachment.device() + " (" + attachment.number() + ") of volume "
                    + volumeId + " is volume " + other.getVolumeId() + "'s (staged at " + other.getStagingPath()
                    + ", phase " + other.getPhase() + "); one device is never staged for two volumes: refusing to"
                    + " stage it, the device was not touched");
        }
    }

    /**
     * Unstage's check: another volume's record names this record's staging path as its own staging path, or
     * names its device. Such a path or device is never unmounted, flushed or detached on behalf of this volume.
     * (A publication of another volume at this staging path is not a claim here: publish takes a target by what
     * is mounted there, not by its name, and the unmount below checks the device of what it finds; counting it
     * would let one volume's publish block another's unstage.)
     *
     * @throws VolumeException FAILED_PRECONDITION naming the other volume; nothing was changed
     */
    void requireOwned(StagingRecord record) throws VolumeException {
        String volumeId = record.getVolumeId();
        String staging = record.getStagingPath();
        for (StagingRecord other : records.all()) {
            if (other.getVolumeId().equals(volumeId) || !holdsDevice(other)) {
                continue;
            }
            if (other.getStagingPath().equals(staging)) {
                throw VolumeException.precondition("staging path " + staging + " of volume " + volumeId
                        + " is volume " + other.getVolumeId() + "'s staging path; nothing was unstaged");
            }
            if (record.hasDevice() && !records.ofEarlierBoot(record)
                    && sameDevice(other, StagingRecords.deviceNumber(record), record.getDevice().getIdentity())) {
                throw VolumeException.precondition("device " + record.getDevice().getPath() + " ("
                        + StagingRecords.deviceNumber(record) + ") of volume " + volumeId + " is also volume "
                        + other.getVolumeId() + "'s (staged at " + other.getStagingPath() + "); it is never unmounted,"
                        + " flushed or detached on behalf of another volume: nothing was unstaged");
            }
        }
    }

    /** The record of another volume that names this device (by number; see the class comment for identities). */
    Optional<StagingRecord> holderOf(String volumeId, DeviceNumber number, String identity) throws VolumeException {
        for (StagingRecord other : records.all()) {
            if (!other.getVolumeId().equals(volumeId) && holdsDevice(other) && sameDevice(other, number, identity)) {
                return Optional.of(other);
            }
        }
        return Optional.empty();
    }

    /** The record of another volume staged or published at {@code path} (a rebuilt record must not claim it). */
    Optional<StagingRecord> claimantOf(String volumeId, Path path) throws VolumeException {
        String name = path.toString();
        for (StagingRecord other : records.all()) {
            if (!other.getVolumeId().equals(volumeId)
                    && (other.getStagingPath().equals(name) || other.containsPublications(name))) {
                return Optional.of(other);
            }
        }
        return Optional.empty();
    }

    /**
     * A record names a device once its transport attached one (any phase after ATTACHING, any access type), by a
     * number of this boot (or of a record that says no boot).
     */
    private boolean holdsDevice(StagingRecord record) {
        return record.getPhase() != StagePhase.ATTACHING && record.hasDevice() && !records.ofEarlierBoot(record);
    }

    private static boolean sameDevice(StagingRecord record, DeviceNumber number, String identity) {
        return StagingRecords.deviceNumber(record).equals(number)
                && !DeviceIdentity.provablyDifferent(record.getDevice().getIdentity(), identity);
    }
}
