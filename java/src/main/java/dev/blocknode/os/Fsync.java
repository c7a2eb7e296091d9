package dev.blocknode.os;

import dev.blocknode.os.natives.LinuxNative;

import java.io.IOException;

import static dev.blocknode.os.SyscallException.retyped;

/** fsync(2) by name, for files and directories: what makes a written file, or a rename in a directory, durable. */
public final class Fsync {

    private Fsync() {
    }

    public static void path(String path) throws IOException {
        retyped(() -> LinuxNative.fsync(path));
    }
}
