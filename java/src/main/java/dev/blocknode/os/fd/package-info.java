/**
 * Paths opened beneath a directory (the kubelet root) and used by descriptor, so that a writer swapping path
 * components for symlinks cannot steer a mount, a mkdir or a socket outside it. May use os and os.natives.
 */
package dev.blocknode.os.fd;
