package dev.blocknode.multipath;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.Mounter;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Answers "where is device M:m mounted?", to name what keeps a map busy. Reads the whole mount table, so it
 * is asked only after a flush failed, never on the way in.
 */
@FunctionalInterface
public interface MountLookup {

    List<Path> mountPointsOf(DeviceNumber device) throws IOException;

    static MountLookup of(Mounter mounter) {
        return device -> mounter.mountsWhere(entry -> entry.device().equals(device)).stream()
                .map(MountEntry::mountPoint)
                .toList();
    }

    static MountLookup none() {
        return device -> List.of();
    }
}
