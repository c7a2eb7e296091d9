/**
 * The one seam to the host: its value types (device numbers, stat results, where /sys, /dev and /proc are)
 * and the small reads and fsyncs that need nothing else. The os packages are the only callers of
 * os.natives.LinuxNative; everything from volume down reaches the machine through them, and tests redirect them.
 * A failed syscall leaves os as a SyscallException (its errno an Errno), or inside an IOException that says
 * more, never as os.natives' own exception.
 */
package dev.blocknode.os;
