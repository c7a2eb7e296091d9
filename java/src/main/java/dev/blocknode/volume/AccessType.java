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

        /**
         * The filesystem with its mount flags parsed into mount(2)'s flags and data, so a malformed option is
         * refused before anything reaches the host.
         *
         * @throws IllegalArgumentException naming the option that is not a valid mount option
         */
        public static Mount parsed(String fsType, List<String> mountFlags) {
            return new Mount(fsType, mountFlags, MountOptions.parse(mountFlags));
        }
    }

    record Block() implements AccessType {
    }
}
