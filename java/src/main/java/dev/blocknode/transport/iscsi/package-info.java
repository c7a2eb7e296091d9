/**
 * iSCSI through open-iscsi: node records made by hand (no discovery), one login per target shared by its
 * volumes, CHAP written into the record file so that secrets never reach argv, then the shared SAN stack. Like
 * every transport it may use transport.san, multipath, scsi, os and the utilities.
 */
package dev.blocknode.transport.iscsi;
