package dev.blocknode.os.mount;

import dev.blocknode.os.DeviceNumber;

import java.nio.file.Path;

/** One line of /proc/self/mountinfo. {@code root} is the path inside the filesystem that is mounted here. */
public record MountEntry(int id, int parentId, DeviceNumber device, String root, Path mountPoint,
                         String mountOptions, String fsType, String source, String superOptions) {
}
