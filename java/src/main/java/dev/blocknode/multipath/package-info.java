/**
 * dm-multipath: finding a LUN's map from sysfs, having multipathd assemble it, flushing and removing it
 * safely, and reading its paths' health. Only transport uses it; it may use scsi and os.
 */
package dev.blocknode.multipath;
