/**
 * Which filesystems blocknode makes and mounts, and the probe that decides a device is blank before
 * anything formats it. Part of the volume layer; it may use os.exec and the utilities.
 */
package dev.blocknode.volume.filesystem;
