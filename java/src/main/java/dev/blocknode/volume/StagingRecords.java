package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.StateDirFullException;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/** The record store as the volume layer uses it: failures become INTERNAL errors that name the volume. */
final class StagingRecords {

    private final RecordStore store;

    StagingRecords(RecordStore store) {
        this.store = store;
    }

    Optional<StagingRecord> find(String volumeId) throws VolumeException {
        try {
            return store.load(volumeId);
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the staging record of volume " + volumeId, e);
        }
    }

    void save(StagingRecord record) throws VolumeException {
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
    void savePublications(StagingRecord record) throws VolumeException {
        try {
            store.savePublications(record.getVolumeId(), record.getPublicationsMap());
        } catch (StateDirFullException e) {
            throw VolumeException.exhausted("cannot record the publications of volume " + record.getVolumeId()
                    + ": " + e.getMessage() + "; free space there and retry", null);
        } catch (IOException e) {
            throw VolumeException.internal("cannot record the publications of volume " + record.getVolumeId(), e);
        }
    }

    void delete(String volumeId) throws VolumeException {
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
     */
    Optional<StagingRecord> otherVolumeAt(String volumeId, Path path, FileStat stat) throws VolumeException {
        try {
            return store.all().stream()
                    .filter(r -> !r.getVolumeId().equals(volumeId))
                    .filter(r -> r.getStagingPath().equals(path.toString()) || r.containsPublications(path.toString())
                            || (r.hasDevice() && Publications.holdsAnyOf(r, stat)))
                    .findFirst();
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the staging records", e);
        }
    }

    /** Every record (at start). */
    java.util.List<StagingRecord> all() throws VolumeException {
        try {
            return store.all();
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the staging records", e);
        }
    }

    static DeviceNumber deviceNumber(StagingRecord record) {
        return deviceNumber(record.getDevice());
    }

    /** The number of a recorded device: the volume's, or the read-only view of a publication. */
    static DeviceNumber deviceNumber(DeviceRecord device) {
        return new DeviceNumber(device.getMajor(), device.getMinor());
    }

    /** What the transport attached, as recorded: what detach and refreshSize work from. */
    static Attachment attachment(StagingRecord record) {
        return new Attachment(record.getTransport(), devicePath(record), deviceNumber(record),
                record.getDevice().getIdentity(), record.getAttachmentMap());
    }

    /** The attach an ATTACHING record was written for, without secrets (they are never recorded). */
    static AttachRequest attachRequest(StagingRecord record) {
        return new AttachRequest(record.getVolumeId(), record.getVolumeContextMap(), record.getPublishContextMap(),
                Secrets.NONE);
    }

    /** The transport that staged the volume. */
    static Transport transportOf(Transports transports, StagingRecord record) throws VolumeException {
        return transports.named(record.getTransport()).orElseThrow(() -> VolumeException.internal(
                "volume " + record.getVolumeId() + " was staged by transport \"" + record.getTransport()
                        + "\", which this plugin does not have", null));
    }

    /**
     * How the volume's paths serve, as the transport that staged it reads them; empty for a device without
     * paths, and for a transport this plugin does not have (a health verdict is no reason to fail the call).
     */
    static Optional<PathReport> pathHealth(Transports transports, StagingRecord record) throws IOException {
        Optional<Transport> transport = transports.named(record.getTransport());
        return transport.isEmpty() ? Optional.empty() : transport.get().pathHealth(attachment(record));
    }

    static Path devicePath(StagingRecord record) {
        return Path.of(record.getDevice().getPath());
    }
}
