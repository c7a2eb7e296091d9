package dev.blocknode.volume.filesystem;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Decides whether a device is safe to format. blkid's low-level probe (-p, no cache) finds filesystems,
 * partition tables and other signatures; when it finds nothing, the first {@value #HEAD_BYTES} bytes must
 * also be zero, so data of a kind blkid does not know is never formatted over.
 */
public final class DeviceProbe {

    public static final int HEAD_BYTES = 1 << 20;
    private static final int HEAD_CHUNK_BYTES = 8 * 1024;
    private static final int BLKID_NOTHING_FOUND = 2;
    private static final int BLKID_AMBIGUOUS = 8;

    private final CommandRunner commands;

    public DeviceProbe(CommandRunner commands) {
        this.commands = commands;
    }

    public DeviceContent probe(Path device) throws IOException {
        Command blkid = Command.of("blkid", "-p", "-o", "export", device.toString())
                .withTimeout(Duration.ofSeconds(60));
        CommandResult result = commands.run(blkid);
        if (result.exitCode() == BLKID_NOTHING_FOUND) {
            return headIsZero(device) ? new DeviceContent.Blank() : new DeviceContent.UnknownData();
        }
        if (result.exitCode() == BLKID_AMBIGUOUS) {
            return new DeviceContent.OtherSignature("several conflicting (blkid: ambiguous)");
        }
        if (!result.succeeded()) {
            throw CommandException.failed(blkid, result);
        }
        return classify(parseExport(result.stdout()));
    }

    static DeviceContent classify(Map<String, String> tags) {
        String type = tags.get("TYPE");
        String partitionTable = tags.get("PTTYPE");
        String usage = tags.getOrDefault("USAGE", "");
        if (type != null && usage.equals("filesystem")) {
            return new DeviceContent.Filesystem(type);
        }
        if (type != null) {
            return new DeviceContent.OtherSignature(type + (usage.isEmpty() ? "" : " (" + usage + ")"));
        }
        if (partitionTable != null) {
            return new DeviceContent.PartitionTable(partitionTable);
        }
        return new DeviceContent.OtherSignature("unrecognised (blkid: " + tags + ")");
    }

    static Map<String, String> parseExport(String output) {
        Map<String, String> tags = new HashMap<>();
        for (String line : output.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                tags.put(line.substring(0, eq).strip(), line.substring(eq + 1).strip());
            }
        }
        return tags;
    }

    /**
     * Reads with java.io in chunks the JDK reads through a buffer on the native stack (at most 8 KiB): a
     * channel from {@code Files.newInputStream} reads through a temporary direct buffer of the chunk's size
     * that every call thread then keeps for its life, 64 KiB each in a burst of stages (test-e2e/bench,
     * figure e's peak RSS). Smaller reads cost no time here: the zero check dominates.
     */
    private static boolean headIsZero(Path device) throws IOException {
        byte[] buffer = new byte[HEAD_CHUNK_BYTES];
        long remaining = HEAD_BYTES;
        try (InputStream in = new FileInputStream(device.toFile())) {
            while (remaining > 0) {
                int n = in.read(buffer, 0, (int) Math.min(buffer.length, remaining));
                if (n < 0) {
                    return true;
                }
                for (int i = 0; i < n; i++) {
                    if (buffer[i] != 0) {
                        return false;
                    }
                }
                remaining -= n;
            }
        }
        return true;
    }
}
