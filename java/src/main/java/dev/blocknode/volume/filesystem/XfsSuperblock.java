package dev.blocknode.volume.filesystem;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Optional;
import java.util.UUID;

/**
 * The UUID of the xfs filesystem on a device, read from its primary superblock (sector 0: the magic "XFSB", then
 * sb_uuid at byte 32, big-endian as every field of it). The kernel refuses to mount a second xfs with the UUID of one
 * it already has mounted; this is what tells a block-level copy (a clone, a snapshot) from a filesystem of its own.
 * Read with java.io, as the probe reads a device's head; no tool runs for it.
 */
public final class XfsSuperblock {

    private static final int MAGIC = 0x58465342; // "XFSB"
    private static final int UUID_OFFSET = 32;
    private static final int READ_BYTES = UUID_OFFSET + 16;

    private XfsSuperblock() {
    }

    /** The filesystem's UUID; empty when the device does not start with an xfs superblock. */
    public static Optional<UUID> uuidOf(Path device) throws IOException {
        byte[] head;
        try (InputStream in = new FileInputStream(device.toFile())) {
            head = in.readNBytes(READ_BYTES);
        }
        return uuidIn(head);
    }

    static Optional<UUID> uuidIn(byte[] head) {
        if (head.length < READ_BYTES) {
            return Optional.empty();
        }
        ByteBuffer sb = ByteBuffer.wrap(head); // big-endian, as xfs keeps it on disk
        if (sb.getInt(0) != MAGIC) {
            return Optional.empty();
        }
        return Optional.of(new UUID(sb.getLong(UUID_OFFSET), sb.getLong(UUID_OFFSET + 8)));
    }
}
