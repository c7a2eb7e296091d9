package dev.blocknode.os.natives;

/** The kernel rejected an argument, e.g. umount2 of a path that is not a mount point: EINVAL. */
public class InvalidSyscallArgumentException extends NativeIOException {

    private static final long serialVersionUID = 1L;

    public InvalidSyscallArgumentException(String syscall, String path, int errno, String errnoName, String description) {
        super(syscall, path, errno, errnoName, description);
    }
}
