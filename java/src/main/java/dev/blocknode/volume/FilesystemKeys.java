package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.volume.StagePlan.FilesystemPlan;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.MkfsOptions;

import java.util.Locale;
import java.util.Optional;

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
     * Both keys read for a mount, before anything is touched: the mkfs options must suit the filesystem a blank
     * device would get, the request's fs_type, else the node's default; where that is not known ({@code blocknode
     * pv} for a PV naming no fsType), one of the filesystems, the first they suit.
     *
     * @throws VolumeException INVALID_ARGUMENT naming the key and what is wrong with it (the mkfs options first)
     */
    static FilesystemPlan plan(AttachRequest contexts, Optional<FilesystemType> requested,
                               Optional<FilesystemType> nodeDefault) throws VolumeException {
        Optional<FilesystemType> known = requested.or(() -> nodeDefault);
        FilesystemType formatsAs = known.isPresent() ? known.get() : firstSuited(contexts);
        MkfsOptions mkfsOptions = mkfsOptions(contexts, formatsAs);
        return new FilesystemPlan(requested, formatsAs, mkfsOptions, contexts.key(MKFS_OPTIONS), fsck(contexts));
    }

    /** The first filesystem the volume's mkfs options suit; INVALID_ARGUMENT as for the first when none. */
    private static FilesystemType firstSuited(AttachRequest contexts) throws VolumeException {
        VolumeException first = null;
        for (FilesystemType type : FilesystemType.values()) {
            try {
                mkfsOptions(contexts, type);
                return type;
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
