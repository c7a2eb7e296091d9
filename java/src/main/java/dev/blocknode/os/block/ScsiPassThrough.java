package dev.blocknode.os.block;

import dev.blocknode.os.natives.LinuxNative;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;

/**
 * SCSI commands sent through one path device (SG_IO): what SCSI-3 persistent reservations need, since a
 * reservation belongs to the I_T nexus the command travels on, and only that path's device reaches it (a
 * multipath map would pick a path of its own). Bytes in, bytes and numbers out: building and reading the
 * commands is the scsi layer's. A fake stands in for it where the machine has no SCSI.
 */
@FunctionalInterface
public interface ScsiPassThrough {

    /** Which way the command's data goes. */
    enum Direction { NONE, TO_DEVICE, FROM_DEVICE }

    /** One command: its CDB, its data (what to send, or a buffer of the size to receive), how long it may take. */
    record Command(byte[] cdb, Direction direction, byte[] data, Duration timeout) {

        public Command {
            cdb = cdb.clone();
            data = data.clone();
        }

        @Override
        public byte[] cdb() {
            return cdb.clone();
        }

        @Override
        public byte[] data() {
            return data.clone();
        }
    }

    /**
     * What came back: the SCSI status byte, the transport's and the midlayer's verdicts (host and driver
     * status, 0 when all went well on the way), the data received (its length less the residual) and the
     * sense bytes.
     */
    record Reply(int status, int hostStatus, int driverStatus, byte[] data, byte[] sense) {

        public Reply {
            data = data.clone();
            sense = sense.clone();
        }

        @Override
        public byte[] data() {
            return data.clone();
        }

        @Override
        public byte[] sense() {
            return sense.clone();
        }
    }

    /**
     * Sends {@code command} to the LUN behind {@code device} through that device's path.
     *
     * @throws IOException when the command could not be issued at all (no such device, not a SCSI device)
     */
    Reply send(Path device, Command command) throws IOException;

    /** The kernel's SG_IO. */
    ScsiPassThrough SG_IO = (device, command) -> {
        byte[] data = command.data();
        int direction = switch (command.direction()) {
            case NONE -> LinuxNative.SCSI_NO_DATA;
            case TO_DEVICE -> LinuxNative.SCSI_TO_DEVICE;
            case FROM_DEVICE -> LinuxNative.SCSI_FROM_DEVICE;
        };
        byte[] sense = new byte[96];
        int millis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, command.timeout().toMillis()));
        int[] result = LinuxNative.scsiCommand(device.toString(), command.cdb(), direction,
                data.length == 0 ? null : data, sense, millis);
        int received = command.direction() == Direction.FROM_DEVICE
                ? Math.max(0, data.length - Math.max(0, result[LinuxNative.SCSI_RESIDUAL])) : 0;
        return new Reply(result[LinuxNative.SCSI_STATUS], result[LinuxNative.SCSI_HOST_STATUS],
                result[LinuxNative.SCSI_DRIVER_STATUS], Arrays.copyOf(data, received),
                Arrays.copyOf(sense, Math.min(sense.length, result[LinuxNative.SCSI_SENSE_LENGTH])));
    };
}
