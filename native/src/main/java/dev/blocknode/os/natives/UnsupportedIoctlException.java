package dev.blocknode.os.natives;

/** The device's driver does not take this ioctl (ENOTTY): SG_IO on a device that is not SCSI, as a loop device. */
public class UnsupportedIoctlException extends NativeIOException {

    private static final long serialVersionUID = 1L;

    public UnsupportedIoctlException(String syscall, String path, int errno, String errnoName, String description) {
        super(syscall, path, errno, errnoName, description);
    }
}
