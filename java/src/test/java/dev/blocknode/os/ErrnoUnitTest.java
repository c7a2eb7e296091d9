package dev.blocknode.os;

import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    /**
     * On a C library older than glibc 2.32 (no strerrorname_np) the JNI layer names an errno from its own table;
     * an errno Java branches on but missing there would read as OTHER on such a node (ENOTEMPTY, EMSGSIZE and
     * ENOBUFS were), so a non-empty directory or a netlink overrun would be taken for another failure.
     */
    @Test
    void theNativeFallbackTableNamesEveryListedErrno() throws Exception {
        String errors = Files.readString(GeneratedDocs.repositoryRoot().resolve("native/src/main/c/errors.c"));
        String table = errors.substring(errors.indexOf("errno_names[] = {"), errors.indexOf("};",
                errors.indexOf("errno_names[] = {")));
        List<String> named = Pattern.compile("BN_ERRNO\\((E[A-Z0-9]+)\\)").matcher(table).results()
                .map(m -> m.group(1)).toList();
        List<String> missing = Arrays.stream(Errno.values()).filter(e -> e != Errno.OTHER).map(Enum::name)
                .filter(name -> !named.contains(name)).toList();
        assertTrue(missing.isEmpty(), "errors.c's fallback table lacks " + missing);
    }
}
