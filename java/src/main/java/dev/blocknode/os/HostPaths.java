package dev.blocknode.os;

import java.nio.file.Files;
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

    /**
     * Where the iscsiadm that runs beside the plugin keeps its node records: a Debian-built open-iscsi (the
     * plugin's image) uses /etc/iscsi whatever the host's distribution does, so /etc/iscsi wins whenever it
     * exists; /var/lib/iscsi (beside /etc's parent: the same root) only for a host-installed open-iscsi built
     * that way.
     */
    public Path iscsiDatabase() {
        Path etcIscsi = etc.resolve("iscsi");
        Path varLib = etc.resolveSibling("var/lib/iscsi");
        return Files.isDirectory(etcIscsi) || !Files.isDirectory(varLib.resolve("nodes")) ? etcIscsi : varLib;
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

    /** multipath-tools' configuration file (the DaemonSet mounts the host's, created empty where it has none). */
    public Path multipathConf() {
        return etc.resolve("multipath.conf");
    }

    /** The WWIDs multipath may build maps of under find_multipaths strict/yes ({@code multipath -a} adds one). */
    public Path multipathWwids() {
        return etc.resolve("multipath/wwids");
    }

    /** The Unix sockets of this network namespace (the host's, with hostNetwork), abstract ones as "@name". */
    public Path unixSockets() {
        return proc.resolve("net/unix");
    }

    /** nvme_core's multipath parameter, Y or N (absent until nvme_core loads): the kernel's native NVMe multipath. */
    public Path nvmeCoreMultipath() {
        return sys.resolve("module/nvme_core/parameters/multipath");
    }

    /** The running kernel's release (uname -r): the directory of its modules under {@link #kernelModules()}. */
    public Path kernelRelease() {
        return proc.resolve("sys/kernel/osrelease");
    }

    /**
     * /lib/modules, beside /etc (the DaemonSet mounts the host's): a test's fabricated tree holds it at
     * lib/modules beside its etc, so it needs no path of its own in this record.
     */
    public Path kernelModules() {
        return etc.resolveSibling("lib").resolve("modules");
    }

    public Path mountInfo() {
        return proc.resolve("self/mountinfo");
    }

    /** The kernel's random id of this boot: it changes on every boot and never within one. */
    public Path bootId() {
        return proc.resolve("sys/kernel/random/boot_id");
    }
}
