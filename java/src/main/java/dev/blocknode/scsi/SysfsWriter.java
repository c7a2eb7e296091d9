package dev.blocknode.scsi;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The one way blocknode writes to sysfs: the exact bytes, one write(2), no shell. Tests substitute a writer
 * that also plays the kernel's reaction (a scan creates devices, a delete removes them).
 */
@FunctionalInterface
public interface SysfsWriter {

    /**
     * Writes {@code value} to the attribute file.
     *
     * @throws java.nio.file.NoSuchFileException when the attribute (so its device) does not exist
     */
    void write(Path attribute, String value) throws IOException;

    /**
     * Writes straight to the file. The attribute must exist: nothing is created, so a vanished device shows
     * as NoSuchFileException rather than as a stray file. A sysfs store sees exactly one write call; a short
     * write is an error, never continued, because a second write would be a second, truncated command.
     */
    SysfsWriter DIRECT = (attribute, value) -> {
        ByteBuffer bytes = ByteBuffer.wrap(value.getBytes(StandardCharsets.US_ASCII));
        try (FileChannel channel = FileChannel.open(attribute, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            int expected = bytes.remaining();
            int written = channel.write(bytes);
            if (written != expected) {
                throw new IOException("short write to " + attribute + ": " + written + " of " + expected + " bytes");
            }
        }
    };
}
