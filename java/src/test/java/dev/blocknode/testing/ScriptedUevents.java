package dev.blocknode.testing;

import dev.blocknode.os.uevent.Uevent;
import dev.blocknode.os.uevent.UeventSource;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A uevent stream the test feeds: each {@link #emit} is what the kernel would send next, each {@link #fail} an
 * error the next receive throws. Records whether it was closed.
 */
public final class ScriptedUevents implements UeventSource {

    private final LinkedBlockingQueue<Object> next = new LinkedBlockingQueue<>();
    private volatile boolean closed;

    public static Uevent event(String action, String subsystem, String devpath) {
        return new Uevent(action, devpath, subsystem, Map.of("ACTION", action, "DEVPATH", devpath,
                "SUBSYSTEM", subsystem));
    }

    public void emit(Uevent event) {
        next.add(event);
    }

    public void fail(IOException error) {
        next.add(error);
    }

    @Override
    public Optional<Uevent> receive(Duration timeout) throws IOException {
        if (closed) {
            throw new IOException("receive after close");
        }
        Object item;
        try {
            item = next.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        if (item instanceof IOException error) {
            throw error;
        }
        return Optional.ofNullable((Uevent) item);
    }

    /** True once nothing the test emitted is left unread. */
    public boolean drained() {
        return next.isEmpty();
    }

    public boolean closed() {
        return closed;
    }

    @Override
    public void close() {
        closed = true;
    }
}
