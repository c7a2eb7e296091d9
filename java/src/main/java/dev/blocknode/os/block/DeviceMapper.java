package dev.blocknode.os.block;

import java.io.IOException;

/**
 * Device-mapper maps by name, as its control node answers: what {@code dmsetup message}, {@code dmsetup info} and
 * the last step of {@code multipath -f} do, without a process each. Policy (when to remove, how long to retry
 * a busy map, what to fall back to) is the caller's.
 */
public interface DeviceMapper {

    /** What a remove did. */
    enum Removal {
        REMOVED,
        /** The map is open (a holder, a mount, an opener): the kernel left it as it was. */
        BUSY,
        /** There was no map of that name. */
        ABSENT
    }

    /**
     * Sends {@code message} to sector 0 of the map (DM_TARGET_MSG); false when there is no such map.
     *
     * @throws UnavailableException when the control node cannot be used
     */
    boolean message(String map, String message) throws IOException;

    /** How many times the map is open now (DM_DEV_STATUS). */
    int openCount(String map) throws IOException;

    /** Removes the map now, never deferred (DM_DEV_REMOVE). */
    Removal remove(String map) throws IOException;

    /**
     * The control node cannot be used here: none (no device-mapper, or a /dev without it), or a kernel that does
     * not take the call (ENOTTY, EINVAL). The tools may still work: fall back to them.
     */
    final class UnavailableException extends IOException {

        private static final long serialVersionUID = 1L;

        public UnavailableException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
