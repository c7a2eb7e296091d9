package dev.blocknode.state;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.SmallFiles;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.util.regex.Pattern;

/** The kernel's boot id: what tells state of this boot (live mounts) from state of an earlier one. */
public final class BootId {

    /** A UUID in practice; anything else is refused rather than used as a directory name. */
    private static final Pattern SHAPE = Pattern.compile("[0-9a-f-]{8,64}");

    private BootId() {
    }

    /** Far above a UUID and its newline: the kernel's file is never larger. */
    private static final int MAX_BYTES = 256;

    public static String read(HostPaths paths) throws IOException {
        byte[] bytes = SmallFiles.readRegularIfPresent(paths.bootId(), MAX_BYTES)
                .orElseThrow(() -> new NoSuchFileException(paths.bootId().toString(), null, "the kernel's boot id"));
        return requireWellFormed(new String(bytes, StandardCharsets.US_ASCII).strip());
    }

    static String requireWellFormed(String bootId) throws IOException {
        if (!SHAPE.matcher(bootId).matches()) {
            throw new IOException("the kernel's boot id \"" + bootId + "\" is not a UUID");
        }
        return bootId;
    }
}
