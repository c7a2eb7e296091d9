/**
 * NVMe over TCP through the kernel's /dev/nvme-fabrics (no nvme-cli): one controller per portal shared by
 * the subsystem's volumes, native NVMe multipath (no dm-multipath), namespace identities checked, fencing with NVMe
 * reservations through the namespace's head. May use os, scsi's sysfs writer and WWID type, nvme.reservation,
 * transport.san's takeover rule, generation floor and fence settings (shared with SCSI fencing), and the utilities.
 */
package dev.blocknode.transport.nvme;
