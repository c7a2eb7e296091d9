package dev.blocknode.testing.machine;

import dev.blocknode.os.DeviceNumber;

import java.nio.file.Path;

/**
 * One mount in the fake machine's table: what {@code at} shows now ({@code root}), where it came from, and
 * the per-mount-point flags its bind was made with.
 */
final class FakeMount {

    final int id;
    final Path at;
    final FakeNode root;
    final String source;
    final String fsType;
    final DeviceNumber device;
    /** The path inside its filesystem that is mounted (mountinfo's root): "/" but for a device node's bind. */
    final String rootInFilesystem;
    /**
     * "rw", or for a bind made with flags "ro" / "rw" and the MS_ flag bits ("ro,0x3"); for a filesystem mounted
     * with data options, "rw," or "ro," and the data string.
     */
    String flags = "rw";

    FakeMount(int id, Path at, FakeNode root, String source, String fsType, DeviceNumber device,
              String rootInFilesystem) {
        this.id = id;
        this.at = at;
        this.root = root;
        this.source = source;
        this.fsType = fsType;
        this.device = device;
        this.rootInFilesystem = rootInFilesystem;
    }

    boolean readOnly() {
        return flags.startsWith("ro");
    }
}
