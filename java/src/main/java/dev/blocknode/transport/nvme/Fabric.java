package dev.blocknode.transport.nvme;

import dev.blocknode.scsi.SysfsWriter;

import java.nio.file.Path;

/**
 * How this node reaches NVMe/TCP controllers: the directory of its host identity (hostnqn, hostid), the fabrics
 * device connects go through, what writes the sysfs attributes a delete or a rescan is, and how long each step may
 * take. Tests give fakes of the first three.
 */
record Fabric(Path hostConfig, FabricsDevice device, SysfsWriter writer, NvmeTcpTransport.Timeouts timeouts) {
}
