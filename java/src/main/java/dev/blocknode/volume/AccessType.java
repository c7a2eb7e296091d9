package dev.blocknode.volume;

import dev.blocknode.os.mount.MountOptions;

import java.util.List;

/** How a pod consumes the volume: a mounted filesystem, or the raw block device. */
public sealed interface AccessType {

    /** A filesystem; {@code fsType} is empty when the request left the choice to us. */
    record Mount(String fsType, List<String> mountFlags, MountOptions options) implements AccessType {
        public Mount {
            mountFlags = List.copyOf(mountFlags);
        }
    }

    record Block() implements AccessType {
    }
}
