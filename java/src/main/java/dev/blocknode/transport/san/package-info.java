/**
 * The SCSI stack that the FC and iSCSI transports compose, so that they differ only in how a LUN becomes
 * reachable: targeted scans and their undo, attach and release with multipath, and fencing by persistent
 * reservations across a LUN's paths. Its takeover rule, generation floor and fence settings are public for the
 * nvme-tcp transport's fencing, which follows the same rules. May use multipath, scsi, scsi.reservation and os.
 */
package dev.blocknode.transport.san;
