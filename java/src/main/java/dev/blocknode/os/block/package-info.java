/**
 * Block devices by device number: sizes, flushes, loop devices and SG_IO pass-through, through ioctls and
 * sysfs rather than /dev names that can be re-created. May use os, os.exec and os.natives.
 */
package dev.blocknode.os.block;
