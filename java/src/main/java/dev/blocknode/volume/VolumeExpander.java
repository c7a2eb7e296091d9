package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.logging.LogContext;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.encryption.EncryptionKeys;
import dev.blocknode.volume.encryption.Luks2;
import dev.blocknode.volume.encryption.Passphrase;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.read.VolumeLocator;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.Requests;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * NodeExpandVolume: after the storage grew the device, grow the filesystem on it online, by descriptor
 * ({@link FilesystemGrower}: no tool, no mount looked up by name). A block volume needs nothing on the node;
 * either way the answer is the device's size. An encrypted volume grows in the order each layer sits on the one
 * below: the transport's device (its SAN rescan and multipath map), then the dm-crypt mapping (cryptsetup resize,
 * with the passphrase from the request's secrets), then the filesystem; its answer is the mapping's size.
 */
public final class VolumeExpander {

    private static final Logger LOG = Logger.getLogger(VolumeExpander.class.getName());

    private final Host host;
    private final VolumeLocator locator;
    private final OperationGuard guard;
    private final Transports transports;
    private final FilesystemGrower grower;
    private final Luks2 luks;

    VolumeExpander(Host host, VolumeLocator locator, OperationGuard guard, Transports transports,
                   FilesystemGrower grower) {
        this.host = host;
        this.locator = locator;
        this.guard = guard;
        this.transports = transports;
        this.grower = grower;
        this.luks = new Luks2(host.commands());
    }

    /** @return the capacity in bytes now available to the volume */
    public long expand(Requests.Expand request) throws VolumeException {
        StagingRecord record;
        try (VolumeLocator.Located located = locator.locate(request.volumeId(), request.volumePath())) {
            record = located.record();
        }
        if (request.capability().isPresent() && request.capability().get().isBlock() != record.hasBlock()) {
            throw VolumeException.invalid("volume_capability asks for "
                    + (request.capability().get().isBlock() ? "block" : "filesystem") + " access but volume "
                    + request.volumeId() + " is staged for " + (record.hasBlock() ? "block" : "filesystem") + " access");
        }
        // Checked before anything grows: without the key the mapping cannot follow its device.
        Optional<Passphrase> passphrase = record.hasCrypt()
                ? Optional.of(EncryptionKeys.expandPassphrase(request.volumeId(), request.secrets()))
                : Optional.empty();
        try (OperationGuard.Permit ignored = guard.enter(request.volumeId(), "NodeExpandVolume")) {
            Path device = StagingRecords.devicePath(record);
            StagingRecords.transportOf(transports, record).refreshSize(StagingRecords.attachment(record));
            CrashPoints.reach(CrashPoint.EXPAND_REFRESHED);
            long size;
            try {
                size = host.blockDevices().sizeBytes(device);
            } catch (IOException e) {
                throw VolumeException.internal("cannot read the size of device " + device, e);
            }
            if (request.requiredBytes() > size) {
                throw new VolumeException(VolumeException.Outcome.OUT_OF_RANGE, "device " + device + " of volume "
                        + request.volumeId() + " is " + size + " bytes, less than the required "
                        + request.requiredBytes() + "; the storage must grow the volume first");
            }
            // What the volume's user gets: the mapping's size for an encrypted volume, less the LUKS2 header's area.
            long usable = passphrase.isPresent() ? growMapping(request.volumeId(), record, passphrase.get()) : size;
            if (record.hasBlock()) {
                return usable;
            }
            FilesystemType type = FilesystemType.byName(record.getMount().getFsType()).orElseThrow(() ->
                    VolumeException.internal("volume " + request.volumeId() + " records an unknown filesystem \""
                            + record.getMount().getFsType() + "\"", null));
            boolean grew = grower.grow(request.volumeId(), record, type, usable);
            CrashPoints.reach(CrashPoint.EXPAND_GROWN);
            LogContext.outcome(LOG, () -> (grew ? "grew the filesystem of volume " : "the filesystem of volume ")
                    + request.volumeId() + (grew ? " to its device size " : " already fills its device size ") + usable);
            return usable;
        }
    }

    /** Grows the volume's open dm-crypt mapping to its grown device; returns the mapping's new size. */
    private long growMapping(String volumeId, StagingRecord record, Passphrase passphrase) throws VolumeException {
        String mapping = record.getCrypt().getMappingName();
        luks.resize(volumeId, mapping, passphrase);
        Path opened = StagingRecords.usedPath(record);
        long size;
        try {
            size = host.blockDevices().sizeBytes(opened);
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the size of dm-crypt mapping " + mapping + " (" + opened
                    + ") of volume " + volumeId, e);
        }
        LOG.info(() -> "grew dm-crypt mapping " + mapping + " of volume " + volumeId + " to " + size + " bytes");
        return size;
    }
}
