package dev.blocknode.os.natives;

import java.io.IOException;

/**
 * A failed system call made by {@link LinuxNative}, thrown from C (errors.c) for every errno: one class, carrying
 * the raw errno and the C library's name and text for it. Which errnos matter, and the exception each calls for,
 * is decided once above this module, in dev.blocknode.os (its Errno and SyscallException).
 *
 * <p>The message reads like {@code umount2(/var/lib/x): EBUSY (Device or resource busy)}.
 */
public class NativeIOException extends IOException {

    private static final long serialVersionUID = 1L;

    private final String syscall;
    private final String path;
    private final int errno;
    private final String errnoName;

    /**
     * @param syscall     the failed call, e.g. {@code "umount2"} or {@code "ioctl(BLKGETSIZE64)"}
     * @param path        what it was called on; for mount {@code "source -> target"}; may be null
     * @param errno       the errno value
     * @param errnoName   the errno's symbolic name, e.g. {@code "EBUSY"}
     * @param description strerror's text, e.g. {@code "Device or resource busy"}
     */
    public NativeIOException(String syscall, String path, int errno, String errnoName, String description) {
        super(message(syscall, path, errnoName, description));
        this.syscall = syscall;
        this.path = path;
        this.errno = errno;
        this.errnoName = errnoName;
    }

    private static String message(String syscall, String path, String errnoName, String description) {
        StringBuilder sb = new StringBuilder();
        sb.append(syscall);
        if (path != null) {
            sb.append('(').append(path).append(')');
        }
        sb.append(": ").append(errnoName);
        if (description != null && !description.isEmpty()) {
            sb.append(" (").append(description).append(')');
        }
        return sb.toString();
    }

    /** The failed call, e.g. {@code "mount"}, {@code "statx"}, {@code "ioctl(BLKFLSBUF)"}. */
    public String syscall() {
        return syscall;
    }

    /** The path the call was made on; for mount {@code "source -> target"}. May be null. */
    public String path() {
        return path;
    }

    /** The errno value, e.g. 16 for EBUSY. */
    public int errno() {
        return errno;
    }

    /** The errno's symbolic name, e.g. {@code "EBUSY"}. */
    public String errnoName() {
        return errnoName;
    }
}
