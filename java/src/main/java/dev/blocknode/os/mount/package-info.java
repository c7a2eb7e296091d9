/**
 * Everything done with mounts: the Mounter interface and its syscall implementation (no mount(8) fork),
 * mount options and flags, the mountinfo parser. May use os and os.natives.
 */
package dev.blocknode.os.mount;
