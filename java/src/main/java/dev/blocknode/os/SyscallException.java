package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;

import java.io.IOException;

/**
 * A system call the os layer made failed: what the layers above see of the JNI layer's exceptions, which os
 * re-types at its seam ({@link #of}) so that no caller above os depends on os.natives. The subclasses are the
 * failures callers above os tell apart by type; any other is this class, its errno an {@link Errno}.
 *
 * <p>The message is the JNI layer's, unchanged: {@code umount2(/var/lib/x): EBUSY (Device or resource busy)}.
 */
public class SyscallException extends IOException {

    private static final long serialVersionUID = 1L;

    private final String syscall;
    private final String path;
    private final Errno errno;

    SyscallException(NativeIOException failure) {
        super(failure.getMessage());
        this.syscall = failure.syscall();
        this.path = failure.path();
        this.errno = Errno.of(failure);
        // The same failure, re-typed rather than wrapped: its frames are the native call's, and a logged stack
        // trace shows it once, not again as its own cause.
        setStackTrace(failure.getStackTrace());
        for (Throwable suppressed : failure.getSuppressed()) {
            addSuppressed(suppressed);
        }
    }

    /**
     * The os layer's exception for a failed native call: the subclass its errno calls for. The one place an errno
     * picks an exception type; the JNI layer throws one class for every errno.
     */
    public static SyscallException of(NativeIOException failure) {
        return switch (Errno.of(failure)) {
            case ENOENT, ENOTDIR -> new NoSuchPathException(failure);
            case ELOOP, EXDEV -> new UnsafePathException(failure);
            case EPERM, EACCES -> new PermissionDeniedException(failure);
            case EINVAL -> new InvalidSyscallArgumentException(failure);
            default -> new SyscallException(failure);
        };
    }

    /** A call into os.natives, with what it returns. */
    @FunctionalInterface
    public interface NativeCall<T> {
        T run() throws IOException;
    }

    /** A call into os.natives that returns nothing. */
    @FunctionalInterface
    public interface NativeAction {
        void run() throws IOException;
    }

    /** Runs {@code call}, re-typing a JNI exception from it ({@link #of}); any other exception passes as it is. */
    public static <T> T retyped(NativeCall<T> call) throws IOException {
        try {
            return call.run();
        } catch (NativeIOException e) {
            throw of(e);
        }
    }

    /** {@link #retyped(NativeCall)} for a call that returns nothing. */
    public static void retyped(NativeAction action) throws IOException {
        try {
            action.run();
        } catch (NativeIOException e) {
            throw of(e);
        }
    }

    /** The failed call, e.g. {@code "mount"}, {@code "statx"}, {@code "ioctl(BLKFLSBUF)"}. */
    public String syscall() {
        return syscall;
    }

    /** The path the call was made on; for mount {@code "source -> target"}. May be null. */
    public String path() {
        return path;
    }

    public Errno errno() {
        return errno;
    }
}
