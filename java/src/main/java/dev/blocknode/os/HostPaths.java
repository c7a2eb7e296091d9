package dev.blocknode.os;

import java.nio.file.Path;

/**
 * Where the host's kernel interfaces and the node's SAN identity files are. Production uses the real /sys, /dev,
 * /proc and /etc (the DaemonSet mounts the host's /etc/iscsi and /etc/nvme there); unit tests point them at
 * fabricated trees under a temp dir to play hardware and configuration this machine does not have.
 */
public record HostPaths(Path sys, Path dev, Path proc, Path etc) {

    public static HostPaths real() {
        return new HostPaths(Path.of("/sys"), Path.of("/dev"), Path.of("/proc"), Path.of("/etc"));
    }

    /** open-iscsi's name for this node: the IQN that iSCSI targets' access lists name. */
    public Path iscsiInitiatorName() {
        return etc.resolve("iscsi/initiatorname.iscsi");
    }

    /** The directory of nvme-cli's hostnqn and hostid files: who this node is to an NVMe subsystem. */
    public Path nvmeHostDirectory() {
        return etc.resolve("nvme");
    }

    /** This process's own status (VmRSS...), as the kernel reports it. */
    public Path ownStatus() {
        return proc.resolve("self/status");
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
