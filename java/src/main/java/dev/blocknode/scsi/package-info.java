/**
 * SCSI disks through sysfs: targeted scans, identities (WWID, VPD page 0x83), states, and removal after a
 * flush. Shared by multipath and the SAN transports, so it may use only os.
 */
package dev.blocknode.scsi;
