package dev.blocknode.volume;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.Host;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;

import dev.blocknode.os.natives.NoSuchPathException;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds a staged volume at a path named by NodeGetVolumeStats or NodeExpandVolume. These calls only read
 * or grow what is there, so any path that is not where the volume is answers NOT_FOUND.
 */
final class VolumeLocator {

    /** The volume at one of its paths; {@code publication} is empty for the staging path. */
    record Located(StagingRecord record, Path path, Optional<PublicationRecord> publication) {

        /** Whether this path was asked to be read-only (for telling a fault from a wish). */
        boolean expectedReadOnly() {
            AccessMode mode = AccessMode.valueOf(record.getAccessMode());
            return publication.map(PublicationRecord::getReadonly).orElse(mode.readOnly());
        }
    }

    private final Host host;
    private final KubeletPaths paths;
    private final StagingRecords records;

    VolumeLocator(Host host, KubeletPaths paths, StagingRecords records) {
        this.host = host;
        this.paths = paths;
        this.records = records;
    }

    Located locate(String volumeId, String volumePath) throws VolumeException {
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
            throw VolumeException.notFound("volume " + volumeId + " is not at " + path);
        }
        try {
            boolean blockStaging = record.hasBlock() && publication.isEmpty();
            if (blockStaging ? !Files.exists(path, LinkOption.NOFOLLOW_LINKS) : !holdsVolume(record, path)) {
                throw VolumeException.notFound("volume " + volumeId + " is not mounted at " + path);
            }
        } catch (NoSuchPathException | NoSuchFileException absent) {
            throw VolumeException.notFound("volume " + volumeId + " is not at " + path);
        } catch (IOException e) {
            throw VolumeException.internal("cannot inspect " + path, e);
        }
        return new Located(record, path, publication);
    }

    /**
     * A mount of the volume is at {@code path}: one statx answers both questions where the kernel can (and
     * that the path exists: this is called every minute for every volume, so no separate look first).
     */
    private boolean holdsVolume(StagingRecord record, Path path) throws IOException {
        FileStat stat = host.mounter().stat(path);
        return Publications.isMountPoint(host, path, stat) && Publications.holdsVolume(record, path, stat);
    }
}
