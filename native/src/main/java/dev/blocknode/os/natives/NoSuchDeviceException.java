package dev.blocknode.os.natives;

/** No such device, driver or file system type: ENXIO, ENODEV. */
public class NoSuchDeviceException extends NativeIOException {

    private static final long serialVersionUID = 1L;

    public NoSuchDeviceException(String syscall, String path, int errno, String errnoName, String description) {
        super(syscall, path, errno, errnoName, description);
    }
}
