package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The JNI layer's exceptions as os re-types them at its seam: the type callers tell apart, nothing else changed. */
class SyscallExceptionUnitTest {

    /**
     * Every errno the JNI layer used to throw a class of its own for (errors.c's table, until one class carried
     * every errno), with the os class it arrives as: the same types as before, now picked in one place.
     */
    @ParameterizedTest(name = "{0} -> {2}")
    @CsvSource({
            "ENOENT, 2, NoSuchPathException",
            "ENOTDIR, 20, NoSuchPathException",
            "ELOOP, 40, UnsafePathException",
            "EXDEV, 18, UnsafePathException",
            "EPERM, 1, PermissionDeniedException",
            "EACCES, 13, PermissionDeniedException",
            "EINVAL, 22, InvalidSyscallArgumentException",
            "EBUSY, 16, SyscallException",
            "ENXIO, 6, SyscallException",
            "ENODEV, 19, SyscallException",
            "EROFS, 30, SyscallException",
            "ENOTTY, 25, SyscallException",
            "ENOTEMPTY, 39, SyscallException",
            "EIO, 5, SyscallException",
    })
    void eachErrnoArrivesAsTheClassCallersTellItApartBy(String name, int number, String expected) {
        SyscallException retyped = SyscallException.of(new NativeIOException("call", "p", number, name, "text"));

        assertEquals(expected, retyped.getClass().getSimpleName());
        assertEquals("call(p): " + name + " (text)", retyped.getMessage(), "the JNI layer's message, unchanged");
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
                    throw new NativeIOException("stat", "x", 2, "ENOENT", "No such file");
                })));
        assertEquals(7, SyscallException.<Integer>retyped(() -> 7));
    }
}
