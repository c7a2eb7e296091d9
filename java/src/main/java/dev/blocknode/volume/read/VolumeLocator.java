package dev.blocknode.volume.read;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.FilesystemUsage;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.record.Publications;
import dev.blocknode.volume.record.RecordedBoot;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.AccessMode;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds a staged volume at a path named by NodeGetVolumeStats or NodeExpandVolume. These calls only read
 * or grow what is there, so any path that is not where the volume is answers NOT_FOUND. A volume is at its
 * staging path and its publications, as recorded; a block volume also at any device node of its own device
 * below the kubelet root, which is where kubelet asks for its stats (see {@link #deviceNode}).
 */
public final class VolumeLocator {

    /**
     * The volume at one of its paths; {@code publication} is empty for the staging path and for a device node of
     * the volume's own device (see {@link #deviceNode}). {@code opened} is the path opened beneath the kubelet
     * root (absent for a block volume's staging directory): read it by descriptor ({@link #usage()}), never
     * through the request's path again. Close it.
     */
    public record Located(StagingRecord record, Path path, Optional<PublicationRecord> publication,
                   Optional<OpenedPath> opened) implements AutoCloseable {

        /** What statvfs says of the filesystem at the located path, asked through the opened descriptor. */
        FilesystemUsage usage() throws IOException {
            return opened.orElseThrow(() -> new IllegalStateException("no filesystem is opened at " + path)).usage();
        }

        @Override
        public void close() throws VolumeException {
            if (opened.isPresent()) {
                try {
                    opened.get().close();
                } catch (IOException e) {
                    throw VolumeException.internal("cannot close " + path, e);
                }
            }
        }

        /** Whether this path was asked to be read-only (for telling a fault from a wish). */
        boolean expectedReadOnly() {
            AccessMode mode = AccessMode.valueOf(record.getAccessMode());
            return publication.map(PublicationRecord::getReadonly).orElse(mode.readOnly());
        }
    }

    private final Host host;
    private final KubeletPaths paths;
    private final StagingRecords records;

    public VolumeLocator(Host host, KubeletPaths paths, StagingRecords records) {
        this.host = host;
        this.paths = paths;
        this.records = records;
    }

    public Located locate(String volumeId, String volumePath) throws VolumeException {
        StagingRecord record = records.find(volumeId).orElseThrow(() -> VolumeException.notFound(
                "volume " + volumeId + " is not staged on this node"));
        if (record.getPhase() == StagePhase.ATTACHING) {
            throw VolumeException.notFound("volume " + volumeId + " is not staged on this node (its attach was"
                    + " interrupted)");
        }
        Path path;
        try {
            path = paths.confine("volume_path", volumePath);
        } catch (VolumeException refused) {
            throw VolumeException.notFound("volume " + volumeId + " is not at \"" + volumePath + "\": "
                    + refused.getMessage());
        }
        Optional<PublicationRecord> publication =
                Optional.ofNullable(record.getPublicationsMap().get(path.toString()));
        boolean known = publication.isPresent() || record.getStagingPath().equals(path.toString());
        if (!known) {
            if (record.hasBlock()) {
                return deviceNode(volumeId, record, path);
            }
            throw VolumeException.notFound("volume " + volumeId + " is not at " + path);
        }
        boolean blockStaging = record.hasBlock() && publication.isEmpty();
        Optional<OpenedPath> opened = paths.openIfPresent("volume_path", path);
        if (opened.isEmpty()) {
            throw VolumeException.notFound("volume " + volumeId + " is not at " + path);
        }
        try {
            FileStat stat = opened.get().stat();
            if (!blockStaging && !(mountRoot(stat, path) && Publications.holdsVolume(record, path, stat))) {
                throw VolumeException.notFound("volume " + volumeId + " is not mounted at " + path);
            }
            return new Located(record, path, publication, blockStaging ? Optional.empty() : opened);
        } catch (IOException | VolumeException e) {
            closeQuietly(opened.get());
            if (e instanceof VolumeException refused) {
                throw refused;
            }
            throw VolumeException.internal("cannot inspect " + path, e);
        } finally {
            if (blockStaging) {
                closeQuietly(opened.get());
            }
        }
    }

    /**
     * A block volume asked at a path that is neither its staging path nor a publication: found there only when
     * the path is a device node of the volume's device. kubelet asks NodeGetVolumeStats of a raw block volume at
     * {@code <root>/plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/<pod uid>}, not at the target it published
     * (pkg/volume/csi/csi_plugin.go, NewBlockVolumeMapper: {@code NewMetricsCsi(volumeHandle, blockPath + "/" +
     * podUID)}, blockPath being GetGlobalMapPath): its own bind mount of the published device node, made by
     * util.MapBlockVolume and named in no other CSI call. The path is taken for what it is, not for its name:
     * opened beneath the root like every path (no symlink followed, the string never resolved again), it must
     * be a block device node whose device number is the volume's device, or the read-only view a read-only
     * publication of the volume is bound to. Any other file, a symlink, a node of another device: NOT_FOUND.
     * NodeExpandVolume of a block volume is not sent this path: kubelet names the device path it recorded for
     * the volume (pkg/volume/csi/expander.go), which for CSI block is the publish target MapPodDevice returned,
     * already one of the volume's paths; the rule here holds for both calls alike.
     */
    private Located deviceNode(String volumeId, StagingRecord record, Path path) throws VolumeException {
        Optional<OpenedPath> opened;
        try {
            opened = paths.openIfPresent("volume_path", path);
        } catch (VolumeException refused) {
            if (refused.outcome() != VolumeException.Outcome.INVALID_ARGUMENT) {
                throw refused;
            }
            throw VolumeException.notFound("volume " + volumeId + " is not at " + path + ": " + refused.getMessage());
        }
        if (opened.isEmpty()) {
            throw VolumeException.notFound("volume " + volumeId + " is not at " + path);
        }
        try {
            FileStat stat = opened.get().stat();
            if (stat.isBlockDevice()) {
                if (stat.rdev().equals(StagingRecords.usedNumber(record))) {
                    return new Located(record, path, Optional.empty(), opened);
                }
                for (PublicationRecord publication : record.getPublicationsMap().values()) {
                    if (publication.hasReadonlyView()
                            && stat.rdev().equals(StagingRecords.deviceNumber(publication.getReadonlyView()))) {
                        return new Located(record, path, Optional.of(publication), opened);
                    }
                }
            }
            closeQuietly(opened.get());
            throw VolumeException.notFound("volume " + volumeId + " is not at " + path + " (not a device node of"
                    + " its device)");
        } catch (IOException e) {
            closeQuietly(opened.get());
            throw VolumeException.internal("cannot inspect " + path, e);
        }
    }

    /** Whether the opened path is a mount root: statx says so on Linux 5.8+; before, one look by name. */
    private boolean mountRoot(FileStat stat, Path path) throws IOException {
        return Publications.isMountPoint(host, path, stat);
    }

    private static void closeQuietly(OpenedPath opened) {
        try {
            opened.close();
        } catch (IOException ignored) {
            // the descriptor is released even when close reports an error
        }
    }

    /** Which boot the record's device numbers are of (see {@link RecordedBoot}). */
    RecordedBoot bootOf(StagingRecord record) {
        return records.bootOf(record);
    }
}
