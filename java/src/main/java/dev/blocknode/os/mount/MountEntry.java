package dev.blocknode.os.mount;

import dev.blocknode.os.DeviceNumber;

import java.nio.file.Path;
import java.util.List;

/**
 * One line of /proc/self/mountinfo. {@code root} is the path inside the filesystem that is mounted here;
 * {@code optionalFields} are the tagged fields before the "-" separator ({@code shared:N}, {@code master:N},
 * {@code propagate_from:N}, {@code unbindable}): the mount's propagation.
 */
public record MountEntry(int id, int parentId, DeviceNumber device, String root, Path mountPoint,
                         String mountOptions, String fsType, String source, String superOptions,
                         List<String> optionalFields) {

    public MountEntry {
        optionalFields = List.copyOf(optionalFields);
    }

    /** Without optional fields: a private mount. */
    public MountEntry(int id, int parentId, DeviceNumber device, String root, Path mountPoint, String mountOptions,
                      String fsType, String source, String superOptions) {
        this(id, parentId, device, root, mountPoint, mountOptions, fsType, source, superOptions, List.of());
    }

    /** In a peer group: a mount or unmount beneath it is copied to its peers (and they to it). */
    public boolean shared() {
        return optionalFields.stream().anyMatch(field -> field.startsWith("shared:"));
    }
}
