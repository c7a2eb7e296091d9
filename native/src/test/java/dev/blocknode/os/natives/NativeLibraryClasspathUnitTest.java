package dev.blocknode.os.natives;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Loading as production does it: no -Dblocknode.native.library, the library extracted from the
 * classpath resource. Each case runs in a forked JVM, since a JVM loads the library only once.
 */
class NativeLibraryClasspathUnitTest {

    @TempDir
    Path tmp;

    @Test
    void theResourceIsOnTheClasspathAndIsAnElfSharedObject() throws IOException {
        try (InputStream in = NativeLibrary.class.getResourceAsStream(NativeLibrary.RESOURCE)) {
            assertNotNull(in, NativeLibrary.RESOURCE);
            byte[] magic = in.readNBytes(4);
            assertArrayEquals(new byte[] {0x7f, 'E', 'L', 'F'}, magic);
        }
    }

    @Test
    void loadsFromTheClasspathFromManyThreadsAndDeletesTheExtractedCopy() throws IOException {
        Path tmpdir = Files.createDirectory(tmp.resolve("java.io.tmpdir"));

        ForkedJvm.Outcome outcome = ForkedJvm.probe(List.of(), List.of("-Djava.io.tmpdir=" + tmpdir), "load");

        assertEquals(0, outcome.exitCode(), outcome.output());
        assertEquals("[]", outcome.get("failures"));
        assertEquals("true", outcome.get("loaded"));
        assertEquals("null", outcome.get("loadFailure"));
        assertEquals("true", outcome.get("rootIsDirectory"));
        assertEquals("true", outcome.get("rootIsMountPoint"));
        assertFalse(outcome.output().contains("WARNING"), outcome.output());
        try (Stream<Path> left = Files.list(tmpdir)) {
            assertEquals(List.of(), left.toList(), "extracted library and its directory are deleted");
        }
    }

    /**
     * The plugin once hung at start with no line logged: its log-level file's thread made the first native call
     * (LinuxNative's initializer, waiting for the load's lock) while the main thread held that lock inside
     * System.load, whose JNI_OnLoad binds LinuxNative's natives and so waited for that very initializer. Both ways
     * in, at once, in fresh JVMs: none may hang.
     */
    @Test
    void loadingAndAFirstNativeCallAtOnceNeverDeadlock() throws IOException {
        for (int run = 0; run < 12; run++) {
            ForkedJvm.Outcome outcome = ForkedJvm.probe(List.of(), List.of(), "load-or-use");

            assertEquals("false", outcome.get("deadlocked"), "run " + run + ":\n" + outcome.output());
            assertEquals("[]", outcome.get("failures"));
            assertEquals("true", outcome.get("loaded"));
        }
    }

    @Test
    void extractsIntoTheWorkdirWhenOneIsGiven() throws IOException {
        Path workdir = Files.createDirectory(tmp.resolve("workdir"));

        ForkedJvm.Outcome outcome = ForkedJvm.probe(List.of(),
                List.of("-Djava.io.tmpdir=" + tmp.resolve("does-not-exist"),
                        "-D" + NativeLibrary.WORKDIR_PROPERTY + "=" + workdir),
                "load");

        assertEquals(0, outcome.exitCode(), outcome.output());
        assertEquals("true", outcome.get("loaded"));
        try (Stream<Path> left = Files.list(workdir)) {
            assertEquals(List.of(), left.toList());
        }
    }

    @Test
    void aFailedLoadIsRememberedAndReportedNotRetried() throws IOException {
        ForkedJvm.Outcome outcome = ForkedJvm.probe(List.of(),
                List.of("-D" + NativeLibrary.LIBRARY_PROPERTY + "=" + tmp.resolve("missing/libblocknode.so")),
                "load-twice");

        assertEquals(0, outcome.exitCode(), outcome.output());
        assertEquals(UnsatisfiedLinkError.class.getName(), outcome.get("load1"));
        assertEquals("true", outcome.get("load1Cause"));
        assertEquals(UnsatisfiedLinkError.class.getName(), outcome.get("load2"));
        assertEquals("true", outcome.get("load2Cause"));
        assertEquals("false", outcome.get("loaded"));
        assertTrue(outcome.get("loadFailure").startsWith("java.io.FileNotFoundException"), outcome.output());
    }

    @Test
    void inThisJvmTheLibraryIsLoadedOnFirstUse() throws NativeIOException {
        LinuxNative.stat("/");
        assertTrue(NativeLibrary.isLoaded());
        assertNull(NativeLibrary.loadFailure());
        NativeLibrary.load(); // idempotent
    }
}
