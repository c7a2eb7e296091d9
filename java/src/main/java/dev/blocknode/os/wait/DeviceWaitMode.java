package dev.blocknode.os.wait;

/**
 * How SAN waits end: woken by the kernel's uevents (with a slow poll behind), or by polling alone. The plugin's
 * {@code --device-wait} chooses it (config parses the flag into this type: os reads no flag).
 */
public enum DeviceWaitMode {
    EVENTS, POLL
}
