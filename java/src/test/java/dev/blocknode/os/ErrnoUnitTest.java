package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The JNI layer's errno names to constants: the one place such a name is compared. */
class ErrnoUnitTest {

    @Test
    void aListedNameIsItsConstant() {
        assertEquals(Errno.ENOTEMPTY, Errno.of(new NativeIOException("unlinkat", "x", 39, "ENOTEMPTY",
                "Directory not empty")));
        assertEquals(Errno.EAGAIN, Errno.named("EAGAIN"));
    }

    @Test
    void anUnlistedOrUnnamedErrnoIsOther() {
        // The JNI layer names an errno the C library has no name for "E<number>".
        assertEquals(Errno.OTHER, Errno.named("E4242"));
        assertEquals(Errno.OTHER, Errno.named("EHWPOISON"));
        assertEquals(Errno.OTHER, Errno.named("OTHER"));
        assertEquals(Errno.OTHER, Errno.named(null));
    }
}
