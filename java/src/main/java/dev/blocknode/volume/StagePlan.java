package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Transport;
import dev.blocknode.volume.encryption.Passphrase;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.filesystem.MkfsOptions;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A NodeStageVolume request read once, checked from the request alone before anything touches the host: the
 * confined staging path, the transport its contexts select, the filesystem a mount asks for and its keys, the
 * passphrase of an encrypted volume. Everything the stage does after reads this value, never the request again.
 *
 * @param attachPlan what {@code transport} read of its keys ({@link Transport#validate}), which its attach takes, so
 *                   that the stage parses them once
 * @param filesystem empty for a raw block volume, which has no filesystem and ignores the filesystem keys
 * @param passphrase present exactly when the volume asks for LUKS2; never printed ({@link #toString})
 */
record StagePlan(String volumeId, Path staging, VolumeCapability capability, AttachPlan attachPlan,
                 Transport transport, Optional<FilesystemPlan> filesystem, Optional<Passphrase> passphrase) {

    /** The request's id, contexts and secrets, as the transport's plan was read from them. */
    AttachRequest attachRequest() {
        return attachPlan.request();
    }

    /**
     * The filesystem keys of a mount, read as the stage uses them.
     *
     * @param requested  the request's fs_type, if it names one
     * @param formatsAs  what a blank device gets: the requested type, else the node's default ({@code blocknode
     *                   pv}, which knows no node: the first type the mkfs options suit)
     * @param mkfsOptions the volume's mkfs options, parsed for {@code formatsAs}
     * @param mkfsText   volume_context's mkfsOptions as given (blank: absent), for a format of another type
     * @param fsck       whether an ext4 filesystem found on the device may be preened (volume_context fsck)
     */
    record FilesystemPlan(Optional<FilesystemType> requested, FilesystemType formatsAs, MkfsOptions mkfsOptions,
                          Optional<String> mkfsText, boolean fsck) {

        /**
         * The mkfs options for a format as {@code type}: the parsed ones, unless the format is of another type
         * than checked (a retry naming no fs_type finishing an interrupted format of a type the default is not).
         */
        MkfsOptions mkfsOptionsFor(FilesystemType type) throws VolumeException {
            return type == formatsAs ? mkfsOptions : FilesystemKeys.mkfsOptions(mkfsText.orElse(""), type);
        }
    }

    /**
     * Reads and checks {@code request}: the staging path, then its keys ({@link StageRequestRules#read}, the steps
     * {@code blocknode pv} checks too), in the order the checks have always run, so the first problem reported is
     * the same.
     *
     * @throws VolumeException INVALID_ARGUMENT (or what the transport's checks say) naming the first problem
     */
    static StagePlan of(Requests.Stage request, KubeletPaths paths, StageRequestRules rules,
                        FilesystemType defaultFilesystem) throws VolumeException {
        Path staging = paths.confine("staging_target_path", request.stagingPath());
        StageRequestRules.StageKeys keys = rules.read(request, StageKeyReading.stage(defaultFilesystem));
        return new StagePlan(request.volumeId(), staging, request.capability(), keys.attachPlan().orElseThrow(),
                keys.transport().orElseThrow(), keys.filesystem(), keys.passphrase());
    }

    /** The filesystem the request names, if any (a block volume names none). */
    Optional<FilesystemType> requestedFs() {
        return filesystem.flatMap(FilesystemPlan::requested);
    }

    boolean encrypted() {
        return passphrase.isPresent();
    }

    /** Names the volume, where and how it is staged: never the contexts' values or the secrets. */
    @Override
    public String toString() {
        return "StagePlan[volume " + volumeId + " at " + staging + " via " + transport.name()
                + filesystem.map(f -> ", " + f.formatsAs().kernelName()).orElse(", block")
                + (encrypted() ? ", luks2" : "") + "]";
    }
}
