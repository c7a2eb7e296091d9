package dev.blocknode.os.uevent;

import java.io.IOException;
import java.time.Duration;
import java.util.Optional;

/** Where kernel uevents come from: the netlink socket, or a scripted stream in tests. */
public interface UeventSource extends AutoCloseable {

    /** Opens a source; fails where the host does not allow it (no netlink in some sandboxes). */
    @FunctionalInterface
    interface Opener {
        UeventSource open() throws IOException;
    }

    /**
     * Waits at most {@code timeout} for the next uevent. Empty when none came in time, or when what came was
     * dropped (not from the kernel, malformed).
     *
     * @throws EventsLostException when the kernel dropped events (the reader fell behind): something may have
     *                             changed unannounced
     * @throws IOException         when the source broke
     */
    Optional<Uevent> receive(Duration timeout) throws IOException;

    @Override
    void close() throws IOException;
}
