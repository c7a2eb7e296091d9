package dev.blocknode.volume;

import dev.blocknode.metrics.Phases;
import dev.blocknode.os.InvalidSyscallArgumentException;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.request.AccessType;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.logging.Logger;

/**
 * The last step of a stage of a mount volume: the filesystem prepared (found, or made on a blank device) and
 * mounted at the staging path. When the mount of a filesystem this plugin made fails, that filesystem was never
 * mounted: it is taken off the device before the failure is reported ({@link UnmountedFormat}), so the device is
 * blank again and a corrected stage starts over.
 */
final class StageMount {

    // The stage's lines keep the logger operators know them by (docs/reference/log-format.md).
    private static final Logger LOG = Logger.getLogger(VolumeStager.class.getName());

    private final NodeParts node;
    private final FilesystemPreparer filesystems;
    private final UnmountedFormat unmountedFormat;
    private final SharedXfsUuid sharedXfsUuid;

    StageMount(NodeParts node, FilesystemPreparer filesystems, UnmountedFormat unmountedFormat) {
        this.node = node;
        this.filesystems = filesystems;
        this.unmountedFormat = unmountedFormat;
        this.sharedXfsUuid = new SharedXfsUuid(node.host());
    }

    /** Prepares the filesystem on {@code device} (the attached one, or an encrypted volume's mapping) and mounts it. */
    void mount(StageAttempt attempt, Path device, AccessType.Mount mount) throws VolumeException {
        StagePlan plan = attempt.plan();
        StagingRecord.Builder record = attempt.record();
        MountOptions options = mount.options();
        if (plan.capability().accessMode().readOnly()) {
            options = options.withReadOnly();
        }
        StagePlan.FilesystemPlan filesystem = plan.filesystem().orElseThrow();
        FilesystemType type = filesystems.prepare(plan.volumeId(), device, filesystem, options, record);
        try {
            options = sharedXfsUuid.forMount(plan.volumeId(), device, type, record.getMount().getFormattedHere(),
                    options);
            mountAt(attempt, device, type, options);
        } catch (VolumeException failure) {
            throw afterTakingOffUnmountedFormat(plan.volumeId(), device, record, failure);
        }
        record.getMountBuilder().setAwaitingFirstMount(false);
    }

    private void mountAt(StageAttempt attempt, Path device, FilesystemType type, MountOptions options)
            throws VolumeException {
        Path staging = attempt.plan().staging();
        try (OpenedPath directory = node.paths().openDirectoryCreating("staging_target_path", staging)) {
            Phases.run("mount", () -> node.host().mounter().mount(device, directory.viaDescriptor(),
                    type.kernelName(), options));
        } catch (InvalidSyscallArgumentException e) {
            List<String> mkfsFlags = UnmountedFormat.awaitsFirstMount(attempt.record())
                    ? attempt.plan().filesystem().orElseThrow().mkfsOptionsFor(type).flags() : List.of();
            if (!options.data().isEmpty() || !mkfsFlags.isEmpty()) {
                throw einvalRefusal(new Mounting(staging, device, type, options), mkfsFlags, e);
            }
            throw VolumeException.internal("mounting " + device + " (" + type.kernelName() + ") at " + staging
                    + " failed", e);
        } catch (IOException e) {
            throw VolumeException.internal("mounting " + device + " (" + type.kernelName() + ") at " + staging
                    + " failed", e);
        }
    }

    /** The mount the kernel refused. */
    private record Mounting(Path staging, Path device, FilesystemType type, MountOptions options) {
    }

    /**
     * The kernel refused the mount with EINVAL although every option passed its grammar (FilesystemOptions,
     * MkfsOptions) and mkfs made the filesystem: a combination, a feature this device or kernel lacks. Still the
     * caller's to fix: INVALID_ARGUMENT, naming the options, never their values.
     */
    private static VolumeException einvalRefusal(Mounting refused, List<String> mkfsFlags,
                                                 InvalidSyscallArgumentException e) {
        MountOptions options = refused.options();
        List<String> names = options.data().stream().map(o -> o.contains("=") ? o.substring(0, o.indexOf('=') + 1) : o)
                .toList();
        String mounting = "mounting " + refused.device() + " (" + refused.type().kernelName() + ") at "
                + refused.staging() + (names.isEmpty() ? "" : " with options " + names) + " failed with EINVAL: ";
        String hint = SelinuxMountContexts.einvalHint(options) + " (" + e.getMessage() + ")";
        if (mkfsFlags.isEmpty()) {
            return VolumeException.invalid(mounting + "check volume_capability.mount.mount_flags" + hint);
        }
        return VolumeException.invalid(mounting + "this node's kernel refuses the filesystem that volume_context."
                + FilesystemKeys.MKFS_OPTIONS + " " + mkfsFlags + " made" + (names.isEmpty() ? "" : ", or those options")
                + ": check the " + FilesystemKeys.MKFS_OPTIONS + (names.isEmpty() ? "" : " and volume_capability.mount"
                + ".mount_flags") + hint);
    }

    /** The failure of a first mount, once the filesystem this plugin made for it is off the device again. */
    private VolumeException afterTakingOffUnmountedFormat(String volumeId, Path device, StagingRecord.Builder record,
                                                          VolumeException failure) {
        try {
            if (unmountedFormat.takeOff(volumeId, device, record, "its first mount failed")) {
                VolumeException said = new VolumeException(failure.outcome(), failure.getMessage() + "; the "
                        + record.getMount().getFsType() + " filesystem this plugin made was never mounted, and is"
                        + " taken off: device " + device + " is blank again", failure.getCause());
                for (Throwable suppressed : failure.getSuppressed()) {
                    said.addSuppressed(suppressed);
                }
                return said;
            }
        } catch (VolumeException notTakenOff) {
            failure.addSuppressed(notTakenOff);
            LOG.warning(() -> "volume " + volumeId + ": the filesystem this plugin made on device " + device
                    + " was never mounted, and cannot be taken off: " + notTakenOff.getMessage());
        }
        return failure;
    }
}
