package dev.blocknode.os.block;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;

import static dev.blocknode.os.SyscallException.retyped;

/** A block device opened read-only for SG_IO (see {@link ScsiPassThrough}); closing it closes the descriptor. */
final class SgIoChannel implements ScsiPassThrough.Channel {

    private static final int SENSE_BYTES = 96;

    private final Path device;
    private final int fd;
    private final DeviceNumber number;
    private boolean closed;

    private SgIoChannel(Path device, int fd, DeviceNumber number) {
        this.device = device;
        this.fd = fd;
        this.number = number;
    }

    static SgIoChannel open(Path device) throws IOException {
        return retyped(() -> openNatively(device));
    }

    private static SgIoChannel openNatively(Path device) throws IOException {
        int fd = LinuxNative.openBlockDevice(device.toString());
        try {
            return new SgIoChannel(device, fd, FileStat.of(LinuxNative.statAt(fd, "")).rdev());
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
    public ScsiPassThrough.Reply send(ScsiPassThrough.Command command) throws IOException {
        if (closed) {
            throw new IOException("SG_IO on " + device + ": the channel is closed");
        }
        byte[] data = command.data();
        int direction = switch (command.direction()) {
            case NONE -> LinuxNative.SCSI_NO_DATA;
            case TO_DEVICE -> LinuxNative.SCSI_TO_DEVICE;
            case FROM_DEVICE -> LinuxNative.SCSI_FROM_DEVICE;
        };
        byte[] sense = new byte[SENSE_BYTES];
        int millis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, command.timeout().toMillis()));
        int[] result;
        try {
            result = LinuxNative.scsiCommand(fd, command.cdb(), direction, data.length == 0 ? null : data, sense,
                    millis);
        } catch (NativeIOException e) {
            throw new IOException("SG_IO on " + device + " failed: " + e.getMessage(), e);
        }
        int received = command.direction() == ScsiPassThrough.Direction.FROM_DEVICE
                ? Math.max(0, data.length - Math.max(0, result[LinuxNative.SCSI_RESIDUAL])) : 0;
        return new ScsiPassThrough.Reply(result[LinuxNative.SCSI_STATUS], result[LinuxNative.SCSI_HOST_STATUS],
                result[LinuxNative.SCSI_DRIVER_STATUS], Arrays.copyOf(data, received),
                Arrays.copyOf(sense, Math.min(sense.length, result[LinuxNative.SCSI_SENSE_LENGTH])));
    }

    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            retyped(() -> LinuxNative.close(fd));
        }
    }
}
