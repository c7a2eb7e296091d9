package dev.blocknode.state;

import dev.blocknode.os.HostPaths;

import java.io.IOException;
import java.nio.file.Files;
import java.util.regex.Pattern;

/** The kernel's boot id: what tells state of this boot (live mounts) from state of an earlier one. */
public final class BootId {

    /** A UUID in practice; anything else is refused rather than used as a directory name. */
    private static final Pattern SHAPE = Pattern.compile("[0-9a-f-]{8,64}");

    private BootId() {
    }

    public static String read(HostPaths paths) throws IOException {
        return requireWellFormed(Files.readString(paths.bootId()).strip());
    }

    static String requireWellFormed(String bootId) throws IOException {
        if (!SHAPE.matcher(bootId).matches()) {
            throw new IOException("the kernel's boot id \"" + bootId + "\" is not a UUID");
        }
        return bootId;
    }
}
