package dev.blocknode.volume.record;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.StateDirFullException;
import dev.blocknode.state.UnreadableRecordException;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The record store as the volume layer uses it: failures become errors that name the volume. A record file
 * that cannot be read refuses its own volume (FAILED_PRECONDITION naming the file and why), and nothing else:
 * the rules that look at every record ({@link #otherVolumeAt}, {@link #stagedAt}) answer from the records that
 * can be read, except where an unreadable one could be the answer (see each).
 */
public final class StagingRecords {

    private final RecordStore store;

    public StagingRecords(RecordStore store) {
        this.store = store;
    }

    /** @throws VolumeException FAILED_PRECONDITION when the volume's record file exists but cannot be read */
    public Optional<StagingRecord> find(String volumeId) throws VolumeException {
        try {
            return store.load(volumeId);
        } catch (UnreadableRecordException e) {
            throw unreadable(volumeId, e);
        }
    }

    /**
     * Why a volume whose record cannot be read is refused, and what an operator does. FAILED_PRECONDITION: the
     * call cannot succeed until the file is repaired or removed, and no other volume is affected.
     */
    static VolumeException unreadable(String volumeId, UnreadableRecordException e) {
        return new VolumeException(VolumeException.Outcome.FAILED_PRECONDITION, "the staging record of volume "
                + volumeId + " cannot be read, so this node leaves the volume alone: " + e.getMessage()
                + ". Repair or remove " + e.file() + " (once it is removed, NodeUnstageVolume rebuilds the record"
                + " from what is mounted and tears the volume down)", e);
    }

    /** What a problem with a volume's record says in its health: its record cannot be read (see {@link #find}). */
    public static boolean isUnreadable(VolumeException e) {
        return e.getCause() instanceof UnreadableRecordException;
    }

    public void save(StagingRecord record) throws VolumeException {
        try {
            store.save(record);
        } catch (StateDirFullException e) {
            throw VolumeException.exhausted("cannot write the staging record of volume " + record.getVolumeId()
                    + ": " + e.getMessage() + "; free space there and retry", null);
        } catch (IOException e) {
            throw VolumeException.internal("cannot write the staging record of volume " + record.getVolumeId(), e);
        }
    }

    /** Saves a change of the record's publications only (see {@link RecordStore#savePublications}). */
    public void savePublications(StagingRecord record) throws VolumeException {
        try {
            store.savePublications(record.getVolumeId(), record.getPublicationsMap());
        } catch (StateDirFullException e) {
            throw VolumeException.exhausted("cannot record the publications of volume " + record.getVolumeId()
                    + ": " + e.getMessage() + "; free space there and retry", null);
        } catch (IOException e) {
            throw VolumeException.internal("cannot record the publications of volume " + record.getVolumeId(), e);
        }
    }

    public void delete(String volumeId) throws VolumeException {
        try {
            store.delete(volumeId);
        } catch (IOException e) {
            throw VolumeException.internal("cannot delete the staging record of volume " + volumeId, e);
        }
    }

    /**
     * The record of a volume other than {@code volumeId} that uses {@code path}, whose statx is {@code stat}:
     * staged there, published there, or whose device (or the read-only view of any of its publications) is what
     * is mounted there, wherever it is: kubelet binds a published device node again under a path of its own
     * (reads every record: rare path).
     * Asked only for a volume without a record of its own (an unpublish after a lost state dir), before a mount
     * that no record claims is taken down as that volume's. A record that cannot be read could be the one that
     * claims it (its paths and device are unknown), so while there is one, a mount no readable record claims is
     * refused (FAILED_PRECONDITION naming the files) rather than guessed: taking down another volume's pod mount
     * is worse than a teardown that waits. Volumes with a record never get here.
     */
    public Optional<StagingRecord> otherVolumeAt(String volumeId, Path path, FileStat stat) throws VolumeException {
        Optional<StagingRecord> other = store.all().stream()
                .filter(r -> !r.getVolumeId().equals(volumeId))
                .filter(r -> r.getStagingPath().equals(path.toString()) || r.containsPublications(path.toString())
                        || (r.hasDevice() && usesDeviceAt(r, stat)))
                .findFirst();
        if (other.isEmpty()) {
            requireNoUnreadable("volume " + volumeId + " has no staging record, and the mount at " + path);
        }
        return other;
    }

    /**
     * True when {@code stat} (of any path) is a mount of the volume: its filesystem, or for block access a node of
     * its device or of the read-only view of any of its publications. By device number, never by the path's name.
     * The question of which devices a record names is this class's; Publications asks it of one path.
     */
    private static boolean usesDeviceAt(StagingRecord record, FileStat stat) {
        DeviceNumber number = usedNumber(record);
        if (!record.hasBlock()) {
            return stat.device().equals(number);
        }
        if (!stat.isBlockDevice()) {
            return false;
        }
        if (stat.rdev().equals(number)) {
            return true;
        }
        for (PublicationRecord publication : record.getPublicationsMap().values()) {
            if (publication.hasReadonlyView() && stat.rdev().equals(deviceNumber(publication.getReadonlyView()))) {
                return true;
            }
        }
        return false;
    }

    /** Every record that can be read (at start); {@link #unreadable()} lists the others. */
    public List<StagingRecord> all() {
        return store.all();
    }

    /** The record files that cannot be read. */
    public List<UnreadableRecordException> unreadable() {
        return store.unreadable();
    }

    /**
     * Refuses (FAILED_PRECONDITION naming the files) while a record cannot be read: for a teardown of a volume
     * without a record, which takes down what no readable record claims, the unreadable one may be the owner.
     */
    public void requireNoUnreadable(String what) throws VolumeException {
        List<UnreadableRecordException> unreadable = store.unreadable();
        if (!unreadable.isEmpty()) {
            throw VolumeException.precondition(what + " may belong to a volume whose staging record cannot be read"
                    + " (" + String.join(", ", unreadable.stream().map(e -> e.file().toString()).toList())
                    + "); left it alone until that record is repaired or removed");
        }
    }

    /** What the repair loop's sweep left though no record names it, for {@code blocknode status}. */
    public void saveKeptLeftovers(List<String> kept) throws IOException {
        store.saveKeptLeftovers(kept);
    }

    /** The kernel's boot id now: what {@link #stampBoot} writes beside the device numbers a stage records. */
    public String bootId() {
        return store.bootId();
    }

    /** Which boot the record's device numbers belong to (see {@link RecordedBoot}). */
    public RecordedBoot bootOf(StagingRecord record) {
        return RecordedBoot.of(record, store.bootId());
    }

    /** True when the record's device numbers are of an earlier boot: they name nothing of the volume's now. */
    public boolean ofEarlierBoot(StagingRecord record) {
        return bootOf(record) == RecordedBoot.EARLIER_BOOT;
    }

    /** Marks the device numbers being recorded in {@code record} as this boot's. */
    public StagingRecord.Builder stampBoot(StagingRecord.Builder record) {
        return record.setBootId(store.bootId());
    }

    public static DeviceNumber deviceNumber(StagingRecord record) {
        return deviceNumber(record.getDevice());
    }

    /**
     * The device the volume is used through: what its filesystem is mounted from and a block publication binds.
     * The opened dm-crypt mapping of an encrypted volume, else the attached device. Detach, fencing and the device
     * claims use the attached device ({@link #deviceNumber(StagingRecord)}) whatever this says.
     */
    public static DeviceNumber usedNumber(StagingRecord record) {
        return isOpenedCrypt(record) ? deviceNumber(record.getCrypt().getOpened()) : deviceNumber(record);
    }

    /** The node of {@link #usedNumber}. */
    public static Path usedPath(StagingRecord record) {
        return isOpenedCrypt(record) ? Path.of(record.getCrypt().getOpened().getPath()) : devicePath(record);
    }

    private static boolean isOpenedCrypt(StagingRecord record) {
        return record.hasCrypt() && record.getCrypt().hasOpened();
    }

    /** The number of a recorded device: the volume's, or the read-only view of a publication. */
    public static DeviceNumber deviceNumber(DeviceRecord device) {
        return new DeviceNumber(device.getMajor(), device.getMinor());
    }

    /** What the transport attached, as recorded: what detach and refreshSize work from. */
    public static Attachment attachment(StagingRecord record) {
        return new Attachment(record.getTransport(), devicePath(record), deviceNumber(record),
                record.getDevice().getIdentity(), record.getAttachmentMap());
    }

    /** The attach an ATTACHING record was written for, without secrets (they are never recorded). */
    public static AttachRequest attachRequest(StagingRecord record) {
        return new AttachRequest(record.getVolumeId(), record.getVolumeContextMap(), record.getPublishContextMap(),
                Secrets.NONE);
    }

    /** The transport that staged the volume. */
    public static Transport transportOf(Transports transports, StagingRecord record) throws VolumeException {
        return transports.named(record.getTransport()).orElseThrow(() -> VolumeException.internal(
                "volume " + record.getVolumeId() + " was staged by transport \"" + record.getTransport()
                        + "\", which this plugin does not have", null));
    }

    /**
     * How the volume's paths serve, as the transport that staged it reads them; empty for a device without
     * paths, and for a transport this plugin does not have (a health verdict is no reason to fail the call).
     */
    public static Optional<PathReport> pathHealth(Transports transports, StagingRecord record) throws IOException {
        Optional<Transport> transport = transports.named(record.getTransport());
        return transport.isEmpty() ? Optional.empty() : transport.get().pathHealth(attachment(record));
    }

    public static Path devicePath(StagingRecord record) {
        return Path.of(record.getDevice().getPath());
    }
}
