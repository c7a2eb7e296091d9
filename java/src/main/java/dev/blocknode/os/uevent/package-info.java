/**
 * The kernel's device events from a netlink socket, listened to on one thread, so that waits for a disk or a
 * map end when the kernel announces it instead of at the next poll. May use os.natives.
 */
package dev.blocknode.os.uevent;
