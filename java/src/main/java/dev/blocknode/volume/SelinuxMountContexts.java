package dev.blocknode.volume;

import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.filesystem.SecurityContext;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.VolumeCapability;

import java.util.Optional;

/**
 * The SELinux context a volume's files carry when kubelet mounts it with {@code context=} (a CSIDriver with
 * {@code seLinuxMount: true}). The staging mount's superblock takes the context of its first mount, and every bind
 * mount of it shows the same labels: a bind cannot change them. So a staged volume has one context for as long as
 * it is staged, kept in its record's mount flags, and the rules here compare a request against that record (which
 * a restart of the plugin keeps). Block access has no mount flags in CSI, so no context: kubelet labels a raw
 * device through the container runtime, not through a mount.
 *
 * <p>The contexts are named in messages: both passed {@link SecurityContext}'s grammar, so they hold no
 * character a log line or a status message must escape, and a label is no secret.
 */
final class SelinuxMountContexts {

    private SelinuxMountContexts() {
    }

    /**
     * A stage of a volume staged already must ask for the context it was staged with: the superblock keeps the
     * first one until the volume is unstaged. ALREADY_EXISTS, naming both, when it does not.
     */
    static void requireSameAsStaged(StagingRecord record, AccessType.Mount requested) throws VolumeException {
        Optional<SecurityContext> staged = stagedContext(record);
        Optional<SecurityContext> wanted = contextOf(requested);
        if (!staged.equals(wanted)) {
            throw VolumeException.alreadyExists("volume " + record.getVolumeId() + " is already staged at "
                    + record.getStagingPath() + " with " + describe(staged) + ", the request asks for "
                    + describe(wanted) + ": the filesystem keeps the context of its first mount until it is unstaged");
        }
    }

    /**
     * A publication shows the staged filesystem's labels and cannot change them, so one that asks for a context
     * must ask for the staged one; one that asks for none takes the staged labels as they are, as a bind mount
     * without SELinux would. FAILED_PRECONDITION, naming both, like every other disagreement with the staging.
     */
    static void requirePublishable(StagingRecord record, VolumeCapability capability) throws VolumeException {
        if (!(capability.accessType() instanceof AccessType.Mount requested)) {
            return;
        }
        Optional<SecurityContext> wanted = contextOf(requested);
        if (wanted.isEmpty()) {
            return;
        }
        Optional<SecurityContext> staged = stagedContext(record);
        if (!staged.equals(wanted)) {
            throw VolumeException.precondition("volume " + record.getVolumeId() + " is staged with "
                    + describe(staged) + ", the publication asks for " + describe(wanted)
                    + ": a bind mount cannot relabel the staged filesystem; unstage it first");
        }
    }

    /** The context the record's staging mount was made with; empty for none (or a record of block access). */
    static Optional<SecurityContext> stagedContext(StagingRecord record) {
        if (!record.hasMount()) {
            return Optional.empty();
        }
        try {
            return SecurityContext.mountContextOf(MountOptions.parse(record.getMount().getMountFlagsList()).data());
        } catch (IllegalArgumentException e) {
            // The record's flags were accepted when it was written; a later, stricter grammar refusing them must
            // not make the volume unusable: such a context is compared as none, which a request for one refuses.
            return Optional.empty();
        }
    }

    /**
     * What to add to a mount's EINVAL when its options hold an SELinux context: the kernel refuses one on a node
     * that does not run SELinux (the filesystem then sees an option it does not know) and one whose type or
     * level the loaded policy does not define, and the caller can check neither from the message alone.
     */
    static String einvalHint(MountOptions options) {
        boolean labelled = options.data().stream()
                .anyMatch(o -> SecurityContext.MOUNT_OPTIONS.stream().anyMatch(name -> o.startsWith(name + "=")));
        return labelled ? "; an SELinux context needs SELinux running on the node and a type and level its policy"
                + " defines" : "";
    }

    private static Optional<SecurityContext> contextOf(AccessType.Mount mount) {
        return SecurityContext.mountContextOf(mount.options().data());
    }

    private static String describe(Optional<SecurityContext> context) {
        return context.map(c -> "SELinux context " + c).orElse("no SELinux context");
    }
}
