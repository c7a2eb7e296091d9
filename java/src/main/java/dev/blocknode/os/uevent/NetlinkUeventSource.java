package dev.blocknode.os.uevent;

import dev.blocknode.os.Errno;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.time.Duration;
import java.util.Optional;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * The kernel's uevents from a netlink socket (see {@link LinuxNative#openUeventSocket(int)}). Not thread-safe:
 * one reader thread receives, and the same thread closes it, so the descriptor is never closed under a
 * receive that might then read a reused descriptor.
 */
public final class NetlinkUeventSource implements UeventSource {

    /** Room for bursts, e.g. the events of a rescan of many LUNs while the reader is descheduled. */
    static final int RECEIVE_BUFFER_BYTES = 4 << 20;

    private final int fd;
    private boolean closed;

    private NetlinkUeventSource(int fd) {
        this.fd = fd;
    }

    public static NetlinkUeventSource open() throws IOException {
        return new NetlinkUeventSource(retyped(() -> LinuxNative.openUeventSocket(RECEIVE_BUFFER_BYTES)));
    }

    @Override
    public Optional<Uevent> receive(Duration timeout) throws IOException {
        if (closed) {
            throw new IOException("the uevent socket is closed");
        }
        int millis = (int) Math.min(Integer.MAX_VALUE, Math.max(0, timeout.toMillis()));
        byte[] message;
        try {
            message = LinuxNative.receiveUevent(fd, millis);
        } catch (NativeIOException e) {
            Errno errno = Errno.of(e);
            if (errno == Errno.ENOBUFS || errno == Errno.EMSGSIZE) {
                throw new EventsLostException("kernel uevents were lost", e);
            }
            throw SyscallException.of(e);
        }
        return message == null || message.length == 0 ? Optional.empty() : Uevent.parse(message);
    }

    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            retyped(() -> LinuxNative.close(fd));
        }
    }
}
