package dev.blocknode.os.host;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.block.NvmePassThrough;
import dev.blocknode.os.block.ScsiPassThrough;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.fd.ConfinedDirectory;
import dev.blocknode.os.mount.LinuxMounter;
import dev.blocknode.os.mount.Mounter;

/**
 * The one seam between blocknode and the machine: kernel interfaces by path, external commands, mounts
 * and block devices. Everything above the os packages reaches the host only through a Host, so a test can
 * redirect any part of it. It sits above the packages it composes (block, mount, exec, fd), which share only
 * the value types of {@code dev.blocknode.os}: the arrows inside os point one way. {@code files} opens
 * request paths beneath the kubelet root by descriptor; a test that replaces it replaces the mounter too,
 * since the mounter is then given the paths those descriptors stand for. {@code scsi} sends SCSI commands
 * down one path (the persistent reservations of fencing), {@code nvme} NVMe commands to a namespace (its
 * reservations).
 */
public record Host(HostPaths paths, CommandRunner commands, Mounter mounter, BlockDevices blockDevices,
                   ConfinedDirectory.Opener files, ScsiPassThrough scsi, NvmePassThrough nvme) {

    /** With the kernel's NVMe passthrough: for tests that fake no NVMe namespace. */
    public Host(HostPaths paths, CommandRunner commands, Mounter mounter, BlockDevices blockDevices,
                ConfinedDirectory.Opener files, ScsiPassThrough scsi) {
        this(paths, commands, mounter, blockDevices, files, scsi, NvmePassThrough.IOCTL);
    }

    /** With the kernel's SG_IO: for tests that fake no SCSI target. */
    public Host(HostPaths paths, CommandRunner commands, Mounter mounter, BlockDevices blockDevices,
                ConfinedDirectory.Opener files) {
        this(paths, commands, mounter, blockDevices, files, ScsiPassThrough.SG_IO);
    }

    /** With the host's own descriptors: for tests that fake only what a transport or a command touches. */
    public Host(HostPaths paths, CommandRunner commands, Mounter mounter, BlockDevices blockDevices) {
        this(paths, commands, mounter, blockDevices, ConfinedDirectory.REAL);
    }

    /** This host with {@code scsi} in place of its SCSI commands. */
    public Host withScsi(ScsiPassThrough scsi) {
        return new Host(paths, commands, mounter, blockDevices, files, scsi, nvme);
    }

    /** This host with {@code nvme} in place of its NVMe commands. */
    public Host withNvme(NvmePassThrough nvme) {
        return new Host(paths, commands, mounter, blockDevices, files, scsi, nvme);
    }

    public static Host real() {
        HostPaths paths = HostPaths.real();
        return new Host(paths, new ProcessCommandRunner(), new LinuxMounter(paths), new BlockDevices(paths),
                ConfinedDirectory.REAL);
    }
}
