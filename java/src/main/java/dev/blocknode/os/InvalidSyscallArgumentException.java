package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;

/** The kernel refused an argument of the call: EINVAL (for a mount, often an option). */
public class InvalidSyscallArgumentException extends SyscallException {

    private static final long serialVersionUID = 1L;

    InvalidSyscallArgumentException(NativeIOException failure) {
        super(failure);
    }
}
