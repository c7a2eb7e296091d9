package dev.blocknode.os;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;

/** fsync(2) by name, for files and directories: what makes a written file, or a rename in a directory, durable. */
public final class Fsync {

    private Fsync() {
    }

    public static void path(String path) throws NativeIOException {
        LinuxNative.fsync(path);
    }
}
