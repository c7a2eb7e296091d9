package dev.blocknode.os.natives;

/** The path, or a directory on the way to it, does not exist: ENOENT, ENOTDIR. */
public class NoSuchPathException extends NativeIOException {

    private static final long serialVersionUID = 1L;

    public NoSuchPathException(String syscall, String path, int errno, String errnoName, String description) {
        super(syscall, path, errno, errnoName, description);
    }
}
