/**
 * Waiting for a device to appear or go, woken by os.uevent with a slow poll behind it, on an injected clock so
 * that unit tests never sleep. May use os.uevent and the utilities (config for --device-wait, metrics).
 */
package dev.blocknode.os.wait;
