/**
 * Which filesystems blocknode makes and mounts, and the probe that decides a device is blank before
 * anything formats it; a volume's own mkfs options, the preen of an ext4 filesystem before its mount, and the
 * UUID in an xfs superblock. Part of the volume layer; it may use os.exec and the utilities.
 */
package dev.blocknode.volume.filesystem;
