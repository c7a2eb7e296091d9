package dev.blocknode.volume.record;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagingRecord;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Questions about where a staged volume is in use, answered with O(1) checks per path. */
public final class Publications {

    private Publications() {
    }

    /** The recorded publication targets that still hold a mount. */
    public static List<String> live(Host host, StagingRecord record) throws VolumeException {
        List<String> live = new ArrayList<>();
        for (String target : record.getPublicationsMap().keySet()) {
            Path path = Path.of(target);
            try {
                if (host.mounter().isPresentMountPoint(path)) {
                    live.add(target);
                }
            } catch (IOException e) {
                throw VolumeException.internal("cannot inspect publication " + target, e);
            }
        }
        return live;
    }

    /**
     * Whether {@code path}, whose statx is {@code stat}, is a mount point: the statx says so where the kernel
     * reports STATX_ATTR_MOUNT_ROOT; elsewhere one more look.
     */
    public static boolean isMountPoint(Host host, Path path, FileStat stat) throws IOException {
        return switch (stat.mountRoot()) {
            case YES -> true;
            case NO -> false;
            case UNKNOWN -> host.mounter().isMountPoint(path);
        };
    }

    /**
     * Whether the entry whose statx is {@code stat} is the root of a mount: the statx says so where the kernel
     * reports STATX_ATTR_MOUNT_ROOT (5.8+); before that, a device other than its directory's.
     */
    public static boolean isMountRoot(OpenedPath directory, FileStat stat) throws IOException {
        return switch (stat.mountRoot()) {
            case YES -> true;
            case NO -> false;
            case UNKNOWN -> !stat.device().equals(directory.stat().device());
        };
    }

    /**
     * True when {@code path}, whose statx is {@code stat}, is a mount of the volume's device: for a
     * filesystem, the mounted filesystem lives on it; for block access, the path is the device node itself
     * (bind-mounted onto a file).
     */
    public static boolean holdsVolume(StagingRecord record, Path path, FileStat stat) {
        DeviceNumber number = StagingRecords.usedNumber(record);
        if (record.hasBlock()) {
            PublicationRecord publication = record.getPublicationsMap().get(path.toString());
            if (publication != null && publication.hasReadonlyView()) {
                number = StagingRecords.deviceNumber(publication.getReadonlyView());
            }
            return stat.isBlockDevice() && stat.rdev().equals(number);
        }
        return stat.device().equals(number);
    }
}
