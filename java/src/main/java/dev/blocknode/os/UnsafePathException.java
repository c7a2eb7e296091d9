package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;

/** A path resolved beneath a directory met a symlink (ELOOP) or would have left it (EXDEV): refused, never followed. */
public class UnsafePathException extends SyscallException {

    private static final long serialVersionUID = 1L;

    UnsafePathException(NativeIOException failure) {
        super(failure);
    }
}
