package dev.blocknode.os;

import java.nio.file.Path;

/**
 * Where the host's kernel interfaces are. Production uses the real /sys, /dev and /proc; unit tests point
 * them at fabricated trees under a temp dir to play hardware this machine does not have (FC HBAs, SANs).
 */
public record HostPaths(Path sys, Path dev, Path proc) {

    public static HostPaths real() {
        return new HostPaths(Path.of("/sys"), Path.of("/dev"), Path.of("/proc"));
    }

    /** /sys/dev/block/MAJ:MIN: the kernel's own directory for a block device, present while it exists. */
    public Path sysBlockDevice(DeviceNumber number) {
        return sys.resolve("dev/block").resolve(number.toString());
    }

    public Path mountInfo() {
        return proc.resolve("self/mountinfo");
    }

    /** The kernel's random id of this boot: it changes on every boot and never within one. */
    public Path bootId() {
        return proc.resolve("sys/kernel/random/boot_id");
    }
}
