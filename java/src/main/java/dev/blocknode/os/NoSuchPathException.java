package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;

/** The path, or a directory on the way to it, does not exist: ENOENT, ENOTDIR. */
public class NoSuchPathException extends SyscallException {

    private static final long serialVersionUID = 1L;

    NoSuchPathException(NativeIOException failure) {
        super(failure);
    }
}
