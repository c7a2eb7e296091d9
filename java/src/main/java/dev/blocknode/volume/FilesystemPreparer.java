package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.volume.filesystem.DeviceContent;
import dev.blocknode.volume.filesystem.DeviceProbe;
import dev.blocknode.volume.filesystem.Ext4Preen;
import dev.blocknode.volume.filesystem.FilesystemOptions;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.MkfsOptions;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.VolumeCapability;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The filesystem a staged volume is mounted from: a blank device is formatted (the intent recorded durably
 * before mkfs writes a byte), a matching filesystem is accepted, anything else is refused; a format this
 * plugin began and never finished is the one thing ever formatted over. A blank device is formatted with the
 * volume's own mkfs options ({@link FilesystemKeys}); an ext4 filesystem found on the device is preened before it is
 * mounted ({@link Ext4Preen}), unless the node or the volume turns that off.
 */
final class FilesystemPreparer {

    private static final Logger LOG = Logger.getLogger(FilesystemPreparer.class.getName());

    private final CommandRunner commands;
    private final DeviceProbe probe;
    private final StagingRecords records;
    private final FilesystemType defaultFilesystem;
    private final Ext4Preen preen;
    private final boolean fsckOnNode;

    FilesystemPreparer(CommandRunner commands, StagingRecords records, FilesystemType defaultFilesystem,
                       boolean fsckOnNode) {
        this.commands = commands;
        this.probe = new DeviceProbe(commands);
        this.records = records;
        this.defaultFilesystem = defaultFilesystem;
        this.preen = new Ext4Preen(commands);
        this.fsckOnNode = fsckOnNode;
    }

    /**
     * The volume's filesystem keys, checked from the request alone before anything is touched: the mkfs options
     * against the filesystem a blank device would get. A block volume has no filesystem and ignores them.
     */
    void checkKeys(VolumeCapability capability, AttachRequest contexts, Optional<FilesystemType> requested)
            throws VolumeException {
        if (capability.accessType() instanceof AccessType.Mount) {
            FilesystemKeys.check(contexts, requested.orElse(defaultFilesystem));
        }
    }

    /**
     * The filesystem an earlier attempt began to create on this same device and did not finish (its
     * record says formatting started and never that it was done): carried into the new record, so that
     * the format is finished however many times staging is interrupted. Another device (a retry that
     * attached something else) carries nothing.
     */
    static Optional<String> interruptedFormat(Optional<StagingRecord> existing, Attachment attachment) {
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
    FilesystemType prepare(String volumeId, Path device, Optional<FilesystemType> requested,
                           MountOptions options, StagingRecord.Builder record) throws VolumeException {
        if (!record.getMount().getFormattingStarted().isEmpty() && !record.getMount().getFormattedHere()) {
            return finishInterruptedFormat(volumeId, device, requested, options, record);
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
                requireOptionsOf(type, options);
                MkfsOptions mkfsOptions = FilesystemKeys.mkfsOptions(contexts(record), type);
                // Durably, before mkfs writes a byte: what it leaves if it is cut short is ours to overwrite.
                record.getMountBuilder().setFormattingStarted(type.kernelName());
                records.save(record.build());
                runMkfs(volumeId, device, type, type.format(device, mkfsOptions));
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
                requireOptionsOf(type, options);
                preenBeforeMount(volumeId, device, type, options, record);
            }
            default -> throw VolumeException.precondition("device " + device + " of volume " + volumeId + " holds "
                    + content.describe() + "; blocknode never formats or mounts over existing data");
        }
        record.setMount(record.getMount().toBuilder().setFsType(type.kernelName()).setFormattedHere(formatted));
        records.save(record.build());
        return type;
    }

    private FilesystemType finishInterruptedFormat(String volumeId, Path device, Optional<FilesystemType> requested,
                                                   MountOptions options, StagingRecord.Builder record)
            throws VolumeException {
        String started = record.getMount().getFormattingStarted();
        // The retry's own fs_type wins: nothing of the first attempt's choice was ever used.
        FilesystemType type = requested.or(() -> FilesystemType.byName(started)).orElseThrow(() ->
                VolumeException.internal("the staging record of volume " + volumeId + " says formatting as \""
                        + started + "\" started, a filesystem this plugin does not make", null));
        LOG.warning(() -> "device " + device + " of volume " + volumeId + ": formatting it as " + type.kernelName()
                + " was interrupted (the plugin stopped, or mkfs failed, before it was recorded as done); the"
                + " device was blank before that mkfs, so it is formatted again");
        runMkfs(volumeId, device, type, type.formatOverInterruptedFormat(device,
                FilesystemKeys.mkfsOptions(contexts(record), type)));
        CrashPoints.reach(CrashPoint.STAGE_FORMATTED);
        record.setMount(record.getMount().toBuilder().setFsType(type.kernelName())
                .setFormattingStarted(type.kernelName()).setFormattedHere(true));
        records.save(record.build());
        return type;
    }

    /**
     * An ext4 filesystem the device already held is preened before it is mounted, unless the node or the volume
     * turns that off. Never when the mount is read-only (a preen writes: it replays the journal, it repairs) nor in
     * a multi-node access mode, where another node may have the filesystem mounted while this one would repair it
     * under that mount. A volume's mkfs options have nothing to do on a device that holds a filesystem: the
     * filesystem was made once, and a stage of it again (after an unstage, on another node) must find it as it is.
     */
    private void preenBeforeMount(String volumeId, Path device, FilesystemType type, MountOptions options,
                                  StagingRecord.Builder record) throws VolumeException {
        AttachRequest contexts = contexts(record);
        if (contexts.key(FilesystemKeys.MKFS_OPTIONS).isPresent()) {
            LOG.fine(() -> "device " + device + " of volume " + volumeId + " holds " + type.kernelName()
                    + " already: its volume_context." + FilesystemKeys.MKFS_OPTIONS + " are not used");
        }
        if (type != FilesystemType.EXT4 || !fsckOnNode || !FilesystemKeys.fsck(contexts) || options.readOnly()
                || AccessMode.valueOf(record.getAccessMode()).multiNode()) {
            return;
        }
        preen.preen(volumeId, device);
    }

    /** The contexts this stage received, as the record holds them (never the secrets). */
    private static AttachRequest contexts(StagingRecord.Builder record) {
        return StagingRecords.attachRequest(record.build());
    }

    /**
     * The filesystem options must suit the filesystem this stage formats or found, checked before mkfs writes a
     * byte. A request naming its fs_type had them checked already (AccessType.Mount.parsed); one naming none
     * learns its filesystem only here (the default for a blank device, else what the probe found).
     */
    private static void requireOptionsOf(FilesystemType type, MountOptions options) throws VolumeException {
        try {
            FilesystemOptions.check(type, options.data(), options.readOnly());
        } catch (IllegalArgumentException e) {
            throw VolumeException.invalid("volume_capability.mount.mount_flags: " + e.getMessage());
        }
    }

    /**
     * Zeroes the first {@link DeviceProbe#HEAD_BYTES} of a device this plugin formatted in the call that is being
     * refused, and syncs them: where ext4 and xfs keep their primary superblock and the probe looks, so that
     * blkid finds nothing and the probe reports the device blank again. Only for that one case (see
     * VolumeStager#undoRefusedFormat). Written with java.io in 8 KiB chunks, as the probe reads.
     */
    void unformat(String volumeId, Path device) throws VolumeException {
        byte[] zeros = new byte[8 * 1024];
        try (RandomAccessFile out = new RandomAccessFile(device.toFile(), "rw")) {
            for (int written = 0; written < DeviceProbe.HEAD_BYTES; written += zeros.length) {
                out.write(zeros);
            }
            out.getFD().sync();
        } catch (IOException e) {
            throw VolumeException.internal("cannot zero the head of device " + device + " of volume " + volumeId, e);
        }
    }

    private void runMkfs(String volumeId, Path device, FilesystemType type, Command mkfs) throws VolumeException {
        try {
            Phases.run("mkfs", () -> commands.runChecked(mkfs.withTimeout(Duration.ofMinutes(5))));
        } catch (CommandException e) {
            throw VolumeException.internal("formatting " + device + " of volume " + volumeId + " as "
                    + type.kernelName() + " failed", e);
        }
    }
}
