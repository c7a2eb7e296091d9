package dev.blocknode.os.uevent;

import java.io.IOException;

/** Uevents were lost (socket buffer overflow, an oversized message): any device may have changed unannounced. */
public final class EventsLostException extends IOException {

    public EventsLostException(String message, Throwable cause) {
        super(message, cause);
    }
}
