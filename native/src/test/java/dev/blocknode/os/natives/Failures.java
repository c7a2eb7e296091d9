package dev.blocknode.os.natives;

import org.junit.jupiter.api.function.Executable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A native call's failure, told apart by the errno it carries: the JNI layer throws one class for every errno, so
 * a test that once asked for a class asks for the errno that class stood for.
 */
final class Failures {

    private Failures() {
    }

    static NativeIOException failsWith(String errnoName, Executable call) {
        NativeIOException e = assertThrows(NativeIOException.class, call);
        assertEquals(errnoName, e.errnoName(), e.getMessage());
        return e;
    }
}
