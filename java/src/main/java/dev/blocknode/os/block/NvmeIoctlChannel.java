package dev.blocknode.os.block;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.nio.file.Path;

import static dev.blocknode.os.SyscallException.retyped;

/**
 * A namespace's block device opened read-only for NVMe passthrough (see {@link NvmePassThrough}); closing it
 * closes the descriptor. Read-only for the reason SG_IO's is: a close after a writable open makes udev probe the
 * disk again; the kernel allows passthrough on it to CAP_SYS_ADMIN (the DaemonSet is privileged).
 */
final class NvmeIoctlChannel implements NvmePassThrough.Channel {

    private final Path device;
    private final int fd;
    private final DeviceNumber number;
    private final int namespaceId;
    private boolean closed;

    private NvmeIoctlChannel(Path device, int fd, DeviceNumber number, int namespaceId) {
        this.device = device;
        this.fd = fd;
        this.number = number;
        this.namespaceId = namespaceId;
    }

    static NvmeIoctlChannel open(Path device) throws IOException {
        return retyped(() -> openNatively(device));
    }

    private static NvmeIoctlChannel openNatively(Path device) throws IOException {
        int fd = LinuxNative.openBlockDevice(device.toString());
        try {
            DeviceNumber number = FileStat.of(LinuxNative.statAt(fd, "")).rdev();
            return new NvmeIoctlChannel(device, fd, number, LinuxNative.nvmeNamespaceId(fd));
        } catch (IOException | RuntimeException e) {
            LinuxNative.close(fd);
            throw e;
        }
    }

    @Override
    public DeviceNumber number() {
        return number;
    }

    @Override
    public int namespaceId() {
        return namespaceId;
    }

    @Override
    public NvmePassThrough.Reply send(NvmePassThrough.Command command) throws IOException {
        if (closed) {
            throw new IOException("NVMe passthrough on " + device + ": the channel is closed");
        }
        byte[] data = command.data();
        int millis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, command.timeout().toMillis()));
        int[] result;
        try {
            result = LinuxNative.nvmeIoCommand(fd, command.opcode(), namespaceId, command.dwords(),
                    data.length == 0 ? null : data, millis);
        } catch (NativeIOException e) {
            throw new IOException("NVMe passthrough on " + device + " failed: " + e.getMessage(), e);
        }
        return new NvmePassThrough.Reply(result[LinuxNative.NVME_STATUS], result[LinuxNative.NVME_RESULT],
                command.receives() ? data : new byte[0]);
    }

    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            retyped(() -> LinuxNative.close(fd));
        }
    }
}
