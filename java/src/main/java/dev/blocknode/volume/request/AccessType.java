package dev.blocknode.volume.request;

import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.volume.filesystem.FilesystemOptions;
import dev.blocknode.volume.filesystem.FilesystemType;

import java.util.List;
import java.util.Optional;

/** How a pod consumes the volume: a mounted filesystem, or the raw block device. */
public sealed interface AccessType {

    /** A filesystem; {@code fsType} is empty when the request left the choice to us. */
    record Mount(String fsType, List<String> mountFlags, MountOptions options) implements AccessType {
        public Mount {
            mountFlags = List.copyOf(mountFlags);
        }

        /**
         * The filesystem with its mount flags parsed into mount(2)'s flags and data, and the data checked
         * against the filesystem's own options (against either filesystem when none is named), so that an
         * option mount(2) would refuse is refused before anything reaches the host. The fs_type itself is
         * checked by the caller (csi's CapabilityTranslator, StageRetryRules).
         *
         * @throws IllegalArgumentException naming the option that is not a valid mount option
         */
        public static Mount parsed(String fsType, List<String> mountFlags) {
            MountOptions options = MountOptions.parse(mountFlags);
            Optional<FilesystemType> type = FilesystemType.byName(fsType);
            if (type.isPresent()) {
                FilesystemOptions.check(type.get(), options.data(), options.readOnly());
            } else {
                FilesystemOptions.checkForEither(options.data(), options.readOnly());
            }
            return new Mount(fsType, mountFlags, options);
        }
    }

    record Block() implements AccessType {
    }
}
