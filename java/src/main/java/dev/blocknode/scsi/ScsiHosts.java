package dev.blocknode.scsi;

import dev.blocknode.os.HostPaths;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * SCSI hosts (an FC HBA port, an iSCSI session): the one thing done to them is a targeted scan. Never the
 * wildcard "- - -", which would make the node discover every LUN of every target behind every host: LUNs
 * that are not its business, and a slow, storage-wide side effect of attaching one volume.
 */
public final class ScsiHosts {

    private final HostPaths paths;
    private final SysfsWriter writer;

    public ScsiHosts(HostPaths paths, SysfsWriter writer) {
        this.paths = paths;
        this.writer = writer;
    }

    /** /sys/class/scsi_host/hostH/scan */
    public Path scanAttribute(int host) {
        return paths.sys().resolve("class/scsi_host/host" + host + "/scan");
    }

    public boolean exists(int host) {
        return Files.isDirectory(paths.sys().resolve("class/scsi_host/host" + host));
    }

    /**
     * Asks the kernel to probe exactly one LUN: writes "C T L" to host H's scan attribute. The kernel
     * probes synchronously for the write (the sd driver may attach the block device a little later: wait for
     * it with {@link ScsiDevices#diskAt}). Probing an absent LUN is not an error; nothing appears.
     *
     * @throws java.nio.file.NoSuchFileException when the host is gone
     */
    public void scan(ScsiAddress address) throws IOException {
        writer.write(scanAttribute(address.host()),
                address.channel() + " " + address.target() + " " + address.lun());
    }
}
