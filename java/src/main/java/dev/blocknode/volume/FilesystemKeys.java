package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.MkfsOptions;

import java.util.Locale;

/**
 * The volume_context keys that shape a volume's filesystem rather than find its device, read with the contexts'
 * precedence (publish_context over volume_context): {@value #MKFS_OPTIONS}, the volume's own mkfs options for a
 * blank device, and {@value #FSCK}, whether an ext4 filesystem is preened before it is mounted ({@code preen}, the
 * default, or {@code off}).
 */
final class FilesystemKeys {

    static final String MKFS_OPTIONS = "mkfsOptions";
    static final String FSCK = "fsck";

    private FilesystemKeys() {
    }

    /**
     * Checks both keys before anything is touched; {@code formatsAs} is the filesystem a blank device would get
     * (the request's fs_type, else the node's default), which the mkfs options must suit.
     *
     * @throws VolumeException INVALID_ARGUMENT naming the key and what is wrong with it
     */
    static void check(AttachRequest contexts, FilesystemType formatsAs) throws VolumeException {
        mkfsOptions(contexts, formatsAs);
        fsck(contexts);
    }

    /**
     * {@link #check} where the node's default filesystem is not known ({@code blocknode pv} for a PV naming no
     * fsType): the mkfs options must suit one of the filesystems.
     */
    static void checkForEither(AttachRequest contexts) throws VolumeException {
        fsck(contexts);
        VolumeException first = null;
        for (FilesystemType type : FilesystemType.values()) {
            try {
                mkfsOptions(contexts, type);
                return;
            } catch (VolumeException e) {
                first = first == null ? e : first;
            }
        }
        throw first;
    }

    static MkfsOptions mkfsOptions(AttachRequest contexts, FilesystemType type) throws VolumeException {
        return mkfsOptions(contexts.key(MKFS_OPTIONS).orElse(""), type);
    }

    /** The value of {@value #MKFS_OPTIONS} ({@code ""} when absent) parsed for a format as {@code type}. */
    static MkfsOptions mkfsOptions(String text, FilesystemType type) throws VolumeException {
        try {
            return MkfsOptions.parse(text, type);
        } catch (IllegalArgumentException e) {
            throw VolumeException.invalid("volume_context." + MKFS_OPTIONS + " (for " + type.kernelName() + "): "
                    + e.getMessage());
        }
    }

    /** True unless the volume turns the preen off. */
    static boolean fsck(AttachRequest contexts) throws VolumeException {
        String value = contexts.key(FSCK).orElse("preen").strip().toLowerCase(Locale.ROOT);
        return switch (value) {
            case "preen" -> true;
            case "off" -> false;
            default -> throw VolumeException.invalid("volume_context." + FSCK + " must be preen or off");
        };
    }
}
