package dev.blocknode.volume;

import dev.blocknode.faults.CrashPoint;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.metrics.Phases;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Attachment;
import dev.blocknode.volume.filesystem.DeviceContent;
import dev.blocknode.volume.filesystem.DeviceProbe;
import dev.blocknode.volume.filesystem.Ext4Preen;
import dev.blocknode.volume.filesystem.FilesystemOptions;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.MkfsOptions;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.AccessMode;

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

    FilesystemPreparer(CommandRunner commands, StagingRecords records, FilesystemSettings settings) {
        this.commands = commands;
        this.probe = new DeviceProbe(commands);
        this.records = records;
        this.defaultFilesystem = settings.defaultFilesystem();
        this.preen = new Ext4Preen(commands);
        this.fsckOnNode = settings.fsckOnNode();
    }

    /**
     * What an earlier attempt on this same device recorded of its own format, carried into the new record: a format it
     * began and did not finish (the format is finished however many times staging is interrupted), or one it finished
     * that was never mounted (still ours to take off, should its first mount fail). Another device (a retry that
     * attached something else) carries nothing.
     */
    static void carryOwnFormat(Optional<StagingRecord> existing, Attachment attachment,
                               MountAccessRecord.Builder mount) {
        Optional<MountAccessRecord> earlier = existing.filter(StagingRecord::hasMount)
                .filter(r -> r.getDevice().getIdentity().equals(attachment.identity())
                        && StagingRecords.deviceNumber(r).equals(attachment.number()))
                .map(StagingRecord::getMount);
        if (earlier.isEmpty()) {
            return;
        }
        if (!earlier.get().getFormattedHere() && !earlier.get().getFormattingStarted().isEmpty()) {
            mount.setFormattingStarted(earlier.get().getFormattingStarted());
        } else if (earlier.get().getFormattedHere() && earlier.get().getAwaitingFirstMount()) {
            mount.setFormattedHere(true).setAwaitingFirstMount(true).setFsType(earlier.get().getFsType());
        }
    }

    /**
     * Formats a blank device; accepts a matching filesystem; refuses everything else. The one exception:
     * a device whose record says this plugin began formatting it (when it was blank) and never finished
     * holds only what that mkfs wrote: its head is zeroed, and it is formatted as the blank device it was.
     * A filesystem made here is recorded as awaiting its first mount ({@link UnmountedFormat}).
     */
    FilesystemType prepare(String volumeId, Path device, StagePlan.FilesystemPlan filesystem,
                           MountOptions options, StagingRecord.Builder record) throws VolumeException {
        Optional<FilesystemType> requested = filesystem.requested();
        Optional<FilesystemType> interrupted = !record.getMount().getFormattingStarted().isEmpty()
                && !record.getMount().getFormattedHere()
                ? blankAfterInterruptedFormat(volumeId, device, record) : Optional.empty();
        DeviceContent content = probed(volumeId, device);
        FilesystemType type;
        boolean ownUnmounted = record.getMount().getFormattedHere() && record.getMount().getAwaitingFirstMount();
        switch (content) {
            case DeviceContent.Blank blank -> {
                // An interrupted format's type only when the retry names none: nothing of its choice was ever used.
                type = requested.or(() -> interrupted).orElse(defaultFilesystem);
                requireOptionsOf(type, options);
                format(volumeId, device, type, filesystem.mkfsOptionsFor(type), record);
                ownUnmounted = true;
            }
            case DeviceContent.Filesystem fs -> {
                type = mountableAs(volumeId, device, fs, requested);
                requireOptionsOf(type, options);
                boolean readOnlyOrShared = options.readOnly()
                        || AccessMode.valueOf(record.getAccessMode()).multiNode();
                preenBeforeMount(volumeId, device, type, filesystem, readOnlyOrShared);
                // Ours and never mounted (an earlier attempt formatted it, then failed or was cut short) stays so.
                ownUnmounted = ownUnmounted && record.getMount().getFsType().equals(type.kernelName());
            }
            default -> throw VolumeException.precondition("device " + device + " of volume " + volumeId + " holds "
                    + content.describe() + "; blocknode never formats or mounts over existing data");
        }
        record.setMount(record.getMount().toBuilder().setFsType(type.kernelName()).setFormattedHere(ownUnmounted)
                .setAwaitingFirstMount(ownUnmounted));
        records.save(record.build());
        return type;
    }

    private DeviceContent probed(String volumeId, Path device) throws VolumeException {
        try {
            return probe.probe(device);
        } catch (IOException e) {
            throw VolumeException.internal("cannot probe device " + device + " of volume " + volumeId, e);
        }
    }

    /** The type of the filesystem {@code fs} found on the device, if it is one blocknode mounts and the one asked. */
    private static FilesystemType mountableAs(String volumeId, Path device, DeviceContent.Filesystem fs,
                                              Optional<FilesystemType> requested) throws VolumeException {
        Optional<FilesystemType> found = FilesystemType.byName(fs.type());
        if (found.isEmpty()) {
            throw VolumeException.precondition("device " + device + " of volume " + volumeId + " holds "
                    + fs.describe() + ", which blocknode does not mount (ext4, xfs)");
        }
        if (requested.isPresent() && requested.get() != found.get()) {
            throw VolumeException.precondition("device " + device + " of volume " + volumeId + " holds "
                    + fs.describe() + " but the request asks for " + requested.get().kernelName()
                    + "; refusing to reformat a device that holds data");
        }
        return found.get();
    }

    /**
     * A blank device formatted with the volume's own mkfs options: first a dry run, so that an option the tool
     * refuses is the caller's INVALID_ARGUMENT while the device is still untouched; then the intent, durably, before
     * mkfs writes a byte (what a cut-short mkfs leaves is ours to blank again); then mkfs. A failed mkfs leaves its
     * device blank again, as it found it (the head zeroed), and the record without the intent: a retry formats it
     * afresh, as the first attempt would have, never over what the failed one wrote.
     */
    private void format(String volumeId, Path device, FilesystemType type, MkfsOptions mkfsOptions,
                        StagingRecord.Builder record) throws VolumeException {
        requireToolAccepts(volumeId, device, type, mkfsOptions);
        record.getMountBuilder().setFormattingStarted(type.kernelName());
        records.save(record.build());
        try {
            runMkfs(volumeId, device, type, type.format(device, mkfsOptions));
        } catch (VolumeException failed) {
            try {
                blank(volumeId, device, record);
            } catch (VolumeException notBlanked) {
                failed.addSuppressed(notBlanked); // the record keeps the intent: the retry blanks it
            }
            throw failed;
        }
        CrashPoints.reach(CrashPoint.STAGE_FORMATTED);
        LOG.info(() -> "formatted blank device " + device + " of volume " + volumeId + " as " + type.kernelName());
    }

    /**
     * The volume's mkfs options as the tool itself reads them, by its dry run (which writes nothing). A refusal
     * names the tool and quotes it (the status message is escaped and bounded where every one is); a dry run
     * that fails even without the volume's options says something about the device or the tool, not the options.
     */
    private void requireToolAccepts(String volumeId, Path device, FilesystemType type, MkfsOptions options)
            throws VolumeException {
        if (options.isEmpty()) {
            return;
        }
        CommandResult withOptions = runDry(volumeId, device, type, options);
        if (withOptions.succeeded()) {
            return;
        }
        CommandResult without = runDry(volumeId, device, type, MkfsOptions.NONE);
        String tool = type.format(device).program();
        if (!without.succeeded()) {
            throw VolumeException.internal("a dry run of " + tool + " on device " + device + " of volume " + volumeId
                    + " fails even without the volume's mkfsOptions (exit " + without.exitCode() + "): "
                    + quoted(without), null);
        }
        throw VolumeException.invalid("volume_context." + FilesystemKeys.MKFS_OPTIONS + " " + options.flags()
                + ": " + tool + " refuses them (exit " + withOptions.exitCode() + "): " + quoted(withOptions)
                + "; nothing was written to device " + device);
    }

    private CommandResult runDry(String volumeId, Path device, FilesystemType type, MkfsOptions options)
            throws VolumeException {
        try {
            return commands.run(type.dryRun(device, options).withTimeout(Duration.ofMinutes(1)));
        } catch (CommandException e) {
            throw VolumeException.internal("a dry run of " + type.format(device).program() + " on device " + device
                    + " of volume " + volumeId + " did not finish", e);
        }
    }

    /** What a tool said, its last lines (where mkfs puts its reason) within {@link #QUOTED_CHARS}. */
    private static String quoted(CommandResult result) {
        String text = result.diagnostic().replace("Proceed anyway? (y,N)", "").strip();
        return text.length() > QUOTED_CHARS ? "..." + text.substring(text.length() - QUOTED_CHARS) : text;
    }

    private static final int QUOTED_CHARS = 300;

    /**
     * A device whose record says this plugin began to format it and never finished (the plugin died in mkfs, or
     * its mkfs failed and the device could not be blanked then) holds nothing but what that mkfs wrote: it is
     * blanked again, to be formatted as the blank device it was. The type that format was for, for a retry that
     * names none.
     */
    private Optional<FilesystemType> blankAfterInterruptedFormat(String volumeId, Path device,
                                                                 StagingRecord.Builder record)
            throws VolumeException {
        String started = record.getMount().getFormattingStarted();
        LOG.warning(() -> "device " + device + " of volume " + volumeId + ": formatting it as " + started
                + " was interrupted (the plugin stopped in mkfs, before it was recorded as done); the device was"
                + " blank before that mkfs, so its head is zeroed and it is formatted again");
        blank(volumeId, device, record);
        return FilesystemType.byName(started);
    }

    /**
     * Zeroes the device's head ({@link #unformat}), then records that no format of ours is under way: in that
     * order, so that a crash in between leaves the intent, and the retry blanks it again.
     */
    void blank(String volumeId, Path device, StagingRecord.Builder record) throws VolumeException {
        unformat(volumeId, device);
        record.getMountBuilder().setFormattingStarted("");
        records.save(record.build());
    }

    /**
     * An ext4 filesystem the device already held is preened before it is mounted, unless the node or the volume
     * turns that off. Never when the mount is read-only (a preen writes: it replays the journal, it repairs) nor in
     * a multi-node access mode, where another node may have the filesystem mounted while this one would repair it
     * under that mount. A volume's mkfs options have nothing to do on a device that holds a filesystem: the
     * filesystem was made once, and a stage of it again (after an unstage, on another node) must find it as it is.
     */
    private void preenBeforeMount(String volumeId, Path device, FilesystemType type,
                                  StagePlan.FilesystemPlan filesystem, boolean readOnlyOrShared)
            throws VolumeException {
        if (filesystem.mkfsText().isPresent()) {
            LOG.fine(() -> "device " + device + " of volume " + volumeId + " holds " + type.kernelName()
                    + " already: its volume_context." + FilesystemKeys.MKFS_OPTIONS + " are not used");
        }
        if (type != FilesystemType.EXT4 || !fsckOnNode || !filesystem.fsck() || readOnlyOrShared) {
            return;
        }
        preen.preen(volumeId, device);
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
     * RefusedStageUndo). Written with java.io in 8 KiB chunks, as the probe reads.
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
