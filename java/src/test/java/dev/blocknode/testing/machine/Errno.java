package dev.blocknode.testing.machine;

import dev.blocknode.os.SyscallException;
import dev.blocknode.os.natives.NativeIOException;

import java.nio.file.Path;

/**
 * The exceptions the JNI layer throws for each errno, as the fake machine's syscalls fail, re-typed as the host's
 * os implementations throw them ({@link SyscallException#of}): the fakes stand in for those implementations.
 */
final class Errno {

    private Errno() {
    }

    static SyscallException noEntry(String call, Path path) {
        return SyscallException.of(new NativeIOException(call, path.toString(), 2, "ENOENT",
                "No such file or directory"));
    }

    static SyscallException notDirectory(String call, Path path) {
        return SyscallException.of(new NativeIOException(call, path.toString(), 20, "ENOTDIR", "Not a directory"));
    }

    /** A symlink met where the resolution follows none (ELOOP). */
    static SyscallException symlink(String call, Path path) {
        return SyscallException.of(new NativeIOException(call, path.toString(), 40, "ELOOP",
                "Too many levels of symbolic links"));
    }

    /** "." or ".." in a path resolved beneath a directory (EXDEV, as the JNI layer reports it). */
    static SyscallException escape(String call, Path path) {
        return SyscallException.of(new NativeIOException(call, path.toString(), 18, "EXDEV",
                "Invalid cross-device link"));
    }

    static SyscallException busy(String call, Path path) {
        return SyscallException.of(new NativeIOException(call, path.toString(), 16, "EBUSY",
                "Device or resource busy"));
    }

    static SyscallException invalid(String call, Path path) {
        return SyscallException.of(new NativeIOException(call, path.toString(), 22, "EINVAL",
                "Invalid argument"));
    }

    static SyscallException notEmpty(String call, Path path) {
        return SyscallException.of(new NativeIOException(call, path.toString(), 39, "ENOTEMPTY",
                "Directory not empty"));
    }

    static SyscallException isDirectory(String call, Path path) {
        return SyscallException.of(new NativeIOException(call, path.toString(), 21, "EISDIR", "Is a directory"));
    }
}
