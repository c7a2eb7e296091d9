package dev.blocknode.scsi;

import java.util.Locale;

/**
 * The kernel's state of a SCSI device (sysfs {@code device/state}). Only RUNNING carries I/O; BLOCKED is a
 * transport hiccup that may pass (FC link bounce, iSCSI reconnect); the offline states need the transport
 * or an operator to recover.
 */
public enum ScsiDeviceState {
    CREATED, RUNNING, CANCEL, DELETED, QUIESCE, OFFLINE, TRANSPORT_OFFLINE, BLOCKED, CREATED_BLOCKED,
    /** The device is not there (any more). */
    GONE,
    /** A state this code does not know: newer kernels may add some. */
    UNKNOWN;

    /** The sysfs spelling: "running", "transport-offline", "created-blocked"... */
    public static ScsiDeviceState parse(String text) {
        String name = text.strip().toUpperCase(Locale.ROOT).replace('-', '_');
        for (ScsiDeviceState state : values()) {
            if (state != GONE && state != UNKNOWN && state.name().equals(name)) {
                return state;
            }
        }
        return UNKNOWN;
    }

    public boolean isRunning() {
        return this == RUNNING;
    }

    public String sysfsName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
