/**
 * NVMe reservations as the NVMe Base Specification defines them (Reservation Register, Report, Acquire and
 * Release): the command dwords, the data, the report and the completion status, byte for byte, sent to one
 * namespace. What to send when is the fencing protocol's (transport); this package may use os.block only.
 */
package dev.blocknode.nvme.reservation;
