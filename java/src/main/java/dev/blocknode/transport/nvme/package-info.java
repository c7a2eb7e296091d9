/**
 * NVMe over TCP through the kernel's /dev/nvme-fabrics (no nvme-cli): one controller per portal shared by
 * the subsystem's volumes, native NVMe multipath (no dm-multipath), namespace identities checked. May use os, scsi's
 * sysfs writer and WWID type, and the utilities.
 */
package dev.blocknode.transport.nvme;
