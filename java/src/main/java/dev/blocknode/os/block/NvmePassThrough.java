package dev.blocknode.os.block;

import dev.blocknode.os.DeviceNumber;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * NVMe I/O commands sent to the namespace behind a block device (the kernel's NVMe passthrough): what NVMe
 * reservations need, which the block layer's persistent-reservation ioctls cannot read back on the kernels
 * nodes run. Numbers and bytes in, numbers and bytes out: building and reading the commands is the nvme
 * layer's. A fake stands in for it where the machine has no NVMe.
 *
 * <p>As with {@link ScsiPassThrough}, a device is opened first and its identity checked by the opened device's
 * number, then every command goes through that same descriptor ({@link Channel}).
 */
@FunctionalInterface
public interface NvmePassThrough {

    /**
     * One command: its opcode (whose bits 1:0 give the data's direction: 01b to the controller, 10b from it),
     * command dwords 10 to 15, its data (what to send, or a buffer of the size to receive), how long it may take.
     */
    record Command(int opcode, int[] dwords, byte[] data, Duration timeout) {

        public static final int DWORDS = 6;

        public Command {
            if (dwords.length != DWORDS) {
                throw new IllegalArgumentException("command dwords 10 to 15 are " + DWORDS + ", not " + dwords.length);
            }
            dwords = dwords.clone();
            data = data.clone();
        }

        /** Whether the data comes from the controller (the opcode's bits 1:0 are 10b). */
        public boolean receives() {
            return (opcode & 0x3) == 0x2;
        }

        @Override
        public int[] dwords() {
            return dwords.clone();
        }

        @Override
        public byte[] data() {
            return data.clone();
        }
    }

    /** What came back: the completion's status field (0: success), its dword 0, and the data received. */
    record Reply(int status, int result, byte[] data) {

        public Reply {
            data = data.clone();
        }

        @Override
        public byte[] data() {
            return data.clone();
        }
    }

    /** A namespace's block device opened for commands. */
    interface Channel extends Closeable {

        /** The opened device's number: what sysfs is asked about it by, after the open. */
        DeviceNumber number();

        /** The namespace's ID, which every command names. */
        int namespaceId();

        /**
         * Sends {@code command} to the opened namespace, through whichever controller the kernel picks (under
         * native multipath, the head's current path).
         *
         * @throws IOException when the command could not be issued at all (the namespace was removed since the
         *                     open, it is not NVMe, no CAP_SYS_ADMIN)
         */
        Reply send(Command command) throws IOException;
    }

    /**
     * Opens {@code device} for commands.
     *
     * @throws IOException when it cannot be opened (gone, not a block device, a symlink) or is not an NVMe namespace
     */
    Channel open(Path device) throws IOException;

    /** The kernel's NVME_IOCTL_IO_CMD. */
    NvmePassThrough IOCTL = NvmeIoctlChannel::open;
}
