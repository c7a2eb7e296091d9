/**
 * SCSI-3 persistent reservations as SPC-4 defines them: the CDBs, parameter lists, answers and sense
 * data, byte for byte, sent down one path device. What to send when is the fencing protocol's (transport.san); this
 * package may use scsi and os.block only.
 */
package dev.blocknode.scsi.reservation;
