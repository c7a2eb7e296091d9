package dev.blocknode.os;

import dev.blocknode.os.natives.DeviceBusyException;
import dev.blocknode.os.natives.NativeIOException;
import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The JNI layer's exceptions as os re-types them at its seam: the type callers tell apart, nothing else changed. */
class SyscallExceptionUnitTest {

    @Test
    void eachTypeCallersTellApartHasItsOwnClass() {
        assertInstanceOf(NoSuchPathException.class, SyscallException.of(new dev.blocknode.os.natives
                .NoSuchPathException("openat", "a", 20, "ENOTDIR", "Not a directory")));
        assertInstanceOf(UnsafePathException.class, SyscallException.of(new dev.blocknode.os.natives
                .UnsafePathException("openat2", "a", 18, "EXDEV", "Invalid cross-device link")));
        assertInstanceOf(PermissionDeniedException.class, SyscallException.of(new dev.blocknode.os.natives
                .PermissionDeniedException("ioctl(EXT4_IOC_RESIZE_FS)", null, 1, "EPERM", "Operation not permitted")));
        assertInstanceOf(InvalidSyscallArgumentException.class, SyscallException.of(new dev.blocknode.os.natives
                .InvalidSyscallArgumentException("mount", "a -> b", 22, "EINVAL", "Invalid argument")));
        assertEquals(SyscallException.class, SyscallException.of(new DeviceBusyException("umount2", "b", 16,
                "EBUSY", "Device or resource busy")).getClass());
    }

    @Test
    void theMessageFramesAndSuppressedAreTheJniExceptionsAndItIsNotWrapped() {
        NativeIOException failure = new NativeIOException("unlinkat", "t", 39, "ENOTEMPTY", "Directory not empty");
        IOException suppressed = new IOException("left");
        failure.addSuppressed(suppressed);

        SyscallException retyped = SyscallException.of(failure);

        assertEquals("unlinkat(t): ENOTEMPTY (Directory not empty)", retyped.getMessage());
        assertEquals("unlinkat", retyped.syscall());
        assertEquals("t", retyped.path());
        assertEquals(Errno.ENOTEMPTY, retyped.errno());
        assertArrayEquals(failure.getStackTrace(), retyped.getStackTrace());
        assertSame(suppressed, retyped.getSuppressed()[0]);
        assertNull(retyped.getCause());
    }

    @Test
    void retypedPassesEverythingButAJniExceptionAsItIs() throws IOException {
        IOException plain = new IOException("not a syscall's");

        assertSame(plain, assertThrows(IOException.class, () -> SyscallException.retyped(() -> {
            throw plain;
        })));
        assertInstanceOf(NoSuchPathException.class, assertThrows(IOException.class, () -> SyscallException.retyped(
                () -> {
                    throw new dev.blocknode.os.natives.NoSuchPathException("stat", "x", 2, "ENOENT", "No such file");
                })));
        assertEquals(7, SyscallException.<Integer>retyped(() -> 7));
    }
}
