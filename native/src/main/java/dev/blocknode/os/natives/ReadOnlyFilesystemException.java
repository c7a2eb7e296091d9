package dev.blocknode.os.natives;

/** A write was needed on a read-only file system or device: EROFS. */
public class ReadOnlyFilesystemException extends NativeIOException {

    private static final long serialVersionUID = 1L;

    public ReadOnlyFilesystemException(String syscall, String path, int errno, String errnoName, String description) {
        super(syscall, path, errno, errnoName, description);
    }
}
