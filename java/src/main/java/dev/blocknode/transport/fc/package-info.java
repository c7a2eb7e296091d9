/**
 * Fibre Channel: the fabric is logged in by the HBA driver, so attaching is finding the target's remote
 * ports and scanning the LUN behind each, then the shared SAN stack (transport.san). Like every transport it may
 * use transport.san, multipath, scsi, os and the utilities.
 */
package dev.blocknode.transport.fc;
