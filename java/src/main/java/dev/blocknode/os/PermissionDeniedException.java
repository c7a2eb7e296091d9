package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;

/** The call needs a privilege or access the plugin lacks: EPERM, EACCES. */
public class PermissionDeniedException extends SyscallException {

    private static final long serialVersionUID = 1L;

    PermissionDeniedException(NativeIOException failure) {
        super(failure);
    }
}
