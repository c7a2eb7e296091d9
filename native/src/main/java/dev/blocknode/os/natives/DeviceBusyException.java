package dev.blocknode.os.natives;

/** The mount, device or target is in use: EBUSY. */
public class DeviceBusyException extends NativeIOException {

    private static final long serialVersionUID = 1L;

    public DeviceBusyException(String syscall, String path, int errno, String errnoName, String description) {
        super(syscall, path, errno, errnoName, description);
    }
}
