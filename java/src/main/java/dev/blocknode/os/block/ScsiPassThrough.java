package dev.blocknode.os.block;

import dev.blocknode.os.DeviceNumber;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * SCSI commands sent through one path device (SG_IO): what SCSI-3 persistent reservations need, since a
 * reservation belongs to the I_T nexus the command travels on, and only that path's device reaches it (a
 * multipath map would pick a path of its own). Bytes in, bytes and numbers out: building and reading the
 * commands is the scsi layer's. A fake stands in for it where the machine has no SCSI.
 *
 * <p>A device is opened first and its identity checked by the opened device's number, then commands go through
 * that same descriptor ({@link Channel}): while it is open the kernel gives the disk's name and number to no
 * other disk, so the check holds for every command. A check by name before an open by name would not: a path
 * lost and another disk probed in between can carry the same name.
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

    /** A path device opened for commands. */
    interface Channel extends Closeable {

        /** The opened device's number: what sysfs is asked about it by, after the open. */
        DeviceNumber number();

        /**
         * Sends {@code command} to the LUN behind the opened device, through that device's path.
         *
         * @throws IOException when the command could not be issued at all (the disk was deleted since the open,
         *                     it is not a SCSI device)
         */
        Reply send(Command command) throws IOException;
    }

    /**
     * Opens {@code device} for commands.
     *
     * @throws IOException when it cannot be opened: gone, not a block device, a symlink
     */
    Channel open(Path device) throws IOException;

    /** The kernel's SG_IO. */
    ScsiPassThrough SG_IO = SgIoChannel::open;
}
