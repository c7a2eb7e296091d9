/**
 * Waiting for a device to appear or go, woken by os.uevent with a slow poll behind it, on an injected clock so
 * that unit tests never sleep. May use os.uevent and the utilities (metrics). Its mode (DeviceWaitMode) is its
 * own type, which config's --device-wait parses into: os reads no flag.
 */
package dev.blocknode.os.wait;
