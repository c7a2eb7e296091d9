package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;

import java.util.Arrays;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The errnos blocknode tells apart: Java's one type for an errno. The JNI layer reports every failure as one
 * exception carrying the raw errno and the name the running system's C library gives it (a number can differ
 * between architectures, the name does not); {@link #of} is the one place such a name is compared, so that a
 * caller tests a constant, which the compiler checks, and never a string. {@link SyscallException#of} picks the
 * exception type from it.
 */
public enum Errno {
    EPERM, ENOENT, ENXIO, EAGAIN, EACCES, EBUSY, EEXIST, EXDEV, ENODEV, ENOTDIR, EISDIR, EINVAL, ENOTTY, EROFS,
    ENOSYS, ENOTEMPTY, ELOOP, EMSGSIZE, ENOBUFS,
    /** A reservation conflict: the block layer's answer to an I/O the storage refused under a reservation. */
    EBADE,
    /** Any errno not listed above: nothing branches on it, and its name stays in the exception's message. */
    OTHER;

    private static final Map<String, Errno> BY_NAME = Arrays.stream(values()).filter(e -> e != OTHER)
            .collect(Collectors.toUnmodifiableMap(Enum::name, Function.identity()));

    /** The errno of a failed system call. */
    public static Errno of(NativeIOException e) {
        return named(e.errnoName());
    }

    static Errno named(String name) {
        return name == null ? OTHER : BY_NAME.getOrDefault(name, OTHER);
    }
}
