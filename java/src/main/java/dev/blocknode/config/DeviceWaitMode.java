package dev.blocknode.config;

import java.util.Locale;

/** {@code --device-wait}: how SAN waits end, woken by the kernel's uevents (with a slow poll behind), or by polling. */
public enum DeviceWaitMode {
    EVENTS, POLL;

    public static DeviceWaitMode parse(String flag, String value) {
        try {
            return valueOf(value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--" + flag + " must be events or poll, got \"" + value + "\"");
        }
    }
}
