package dev.blocknode.os.natives;

/**
 * A path resolved beneath a directory met a symlink (ELOOP), or would have left that directory through an
 * absolute path or a "." / ".." element (EXDEV): the plugin refuses such paths rather than follow them.
 */
public class UnsafePathException extends NativeIOException {

    private static final long serialVersionUID = 1L;

    public UnsafePathException(String syscall, String path, int errno, String errnoName, String description) {
        super(syscall, path, errno, errnoName, description);
    }
}
