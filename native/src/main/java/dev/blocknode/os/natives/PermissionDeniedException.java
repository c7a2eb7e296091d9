package dev.blocknode.os.natives;

/** The caller lacks the privilege or access: EPERM, EACCES. */
public class PermissionDeniedException extends NativeIOException {

    private static final long serialVersionUID = 1L;

    public PermissionDeniedException(String syscall, String path, int errno, String errnoName, String description) {
        super(syscall, path, errno, errnoName, description);
    }
}
