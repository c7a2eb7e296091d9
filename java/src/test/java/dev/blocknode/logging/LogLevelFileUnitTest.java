package dev.blocknode.logging;

import dev.blocknode.os.SmallFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LogLevelFileUnitTest {

    @TempDir
    Path dir;

    private final List<LogLevel> applied = new ArrayList<>();

    private LogLevelFile watching(Path file, LogLevel fallback) {
        return new LogLevelFile(file, fallback, applied::add, SmallFiles::readRegularFollowingLinks);
    }

    @Test
    void theFileWinsOverTheFlagWhileItNamesALevel() throws IOException {
        Path file = Files.writeString(dir.resolve("level"), "fine\n");
        LogLevelFile levels = watching(file, LogLevel.INFO);
        assertEquals(LogLevel.FINE, levels.check());
        Files.writeString(file, "  Warning ");
        assertEquals(LogLevel.WARNING, levels.check());
        Files.writeString(file, "debug");
        assertEquals(LogLevel.FINE, levels.check());
        assertEquals(List.of(LogLevel.FINE, LogLevel.WARNING, LogLevel.FINE), applied);
    }

    @Test
    void aMissingOrBlankFileGivesTheFlagsLevelBack() throws IOException {
        Path file = Files.writeString(dir.resolve("level"), "error");
        LogLevelFile levels = watching(file, LogLevel.WARNING);
        assertEquals(LogLevel.ERROR, levels.check());
        Files.writeString(file, " \n");
        assertEquals(LogLevel.WARNING, levels.check());
        Files.writeString(file, "fine");
        assertEquals(LogLevel.FINE, levels.check());
        Files.delete(file);
        assertEquals(LogLevel.WARNING, levels.check());
        assertEquals(List.of(LogLevel.ERROR, LogLevel.WARNING, LogLevel.FINE, LogLevel.WARNING), applied);
    }

    @Test
    void anUnchangedLevelIsNotAppliedAgain() throws IOException {
        Path file = Files.writeString(dir.resolve("level"), "info");
        LogLevelFile levels = watching(file, LogLevel.INFO);
        levels.check();
        levels.check();
        assertEquals(List.of(), applied);
    }

    @Test
    void contentThatNamesNoLevelLeavesTheLevelWithOneWarning() throws IOException {
        Path file = Files.writeString(dir.resolve("level"), "fine");
        LogLevelFile levels = watching(file, LogLevel.INFO);
        levels.check();
        try (LogCapture log = LogCapture.installed()) {
            Files.writeString(file, "verbose");
            assertEquals(LogLevel.FINE, levels.check());
            assertEquals(LogLevel.FINE, levels.check());
            Files.writeString(file, "x".repeat(LogLevelFile.MAX_BYTES + 1));
            assertEquals(LogLevel.FINE, levels.check());
            List<String> warnings = log.written().stream().filter(w -> w.level() == Level.WARNING)
                    .map(LogCapture.Written::text).toList();
            assertEquals(2, warnings.size(), warnings.toString());
            assertTrue(warnings.get(0).contains("names no level") && warnings.get(0).contains("the level stays fine"),
                    warnings.get(0));
            assertTrue(warnings.get(1).contains("larger than " + LogLevelFile.MAX_BYTES + " bytes"), warnings.get(1));
        }
        assertEquals(List.of(LogLevel.FINE), applied);
    }

    /** A ConfigMap's key is a link into a directory that kubelet replaces as a whole (..data -> ..2026_...). */
    @Test
    void followsAConfigMapsSwappedLinks() throws IOException {
        Path first = Files.createDirectory(dir.resolve("..2026_11_26_12_00_00.1"));
        Files.writeString(first.resolve("level"), "info");
        Files.createSymbolicLink(dir.resolve("..data"), first.getFileName());
        Path key = Files.createSymbolicLink(dir.resolve("level"), Path.of("..data/level"));
        LogLevelFile levels = watching(key, LogLevel.INFO);
        assertEquals(LogLevel.INFO, levels.check());

        Path second = Files.createDirectory(dir.resolve("..2026_11_26_12_01_00.2"));
        Files.writeString(second.resolve("level"), "fine");
        Path swap = Files.createSymbolicLink(dir.resolve("..data_tmp"), second.getFileName());
        Files.move(swap, dir.resolve("..data"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        assertEquals(LogLevel.FINE, levels.check());
    }

    @Test
    void theChangeIsSaidWhereBothLevelsShowIt() {
        assertEquals(Level.INFO, LogLevelFile.announcement(LogLevel.FINE));
        assertEquals(Level.INFO, LogLevelFile.announcement(LogLevel.INFO));
        assertEquals(Level.WARNING, LogLevelFile.announcement(LogLevel.WARNING));
    }

    @Test
    void watchSetsThePluginsLoggersOnItsFirstRead() throws Exception {
        Path file = Files.writeString(dir.resolve("level"), "fine");
        java.util.logging.Logger plugin = java.util.logging.Logger.getLogger("dev.blocknode");
        Level before = plugin.getLevel();
        try (LogLevelFile watched = LogLevelFile.watch(file, LogLevel.INFO, SmallFiles::readRegularFollowingLinks)) {
            assertTrue(watched.awaitFirstRead(Duration.ofSeconds(30)));
            assertEquals(Level.FINE, plugin.getLevel());
        } finally {
            plugin.setLevel(before);
        }
    }

    /**
     * A FIFO at the path kept the plugin from starting (the file was opened, blocking, on the main thread
     * before the socket) until something wrote to it. watch returns before anything is read, whatever the reader does.
     */
    @Test
    void watchReturnsBeforeTheFirstReadEnds() throws Exception {
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        LogLevelFile.Reader stuck = (file, max) -> {
            reading.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return Optional.empty();
        };
        LogLevelFile watched = assertTimeoutPreemptively(Duration.ofSeconds(10),
                () -> LogLevelFile.watch(dir.resolve("level"), LogLevel.INFO, stuck));
        try {
            assertTrue(reading.await(30, TimeUnit.SECONDS), "the first read is made, on the watcher's thread");
            assertFalse(watched.awaitFirstRead(Duration.ZERO));
            release.countDown();
            assertTrue(watched.awaitFirstRead(Duration.ofSeconds(30)));
        } finally {
            release.countDown();
            watched.close();
        }
    }

    /** What is at the path is looked at, never waited on: each is one warning, and the level stays. */
    @Test
    void aFifoADirectoryADeviceOrAHugeFileIsAWarningAndNeverWaitedOn() throws Exception {
        Path file = dir.resolve("level");
        Files.writeString(file, "fine");
        LogLevelFile levels = watching(file, LogLevel.INFO);
        levels.check();
        Path huge = dir.resolve("huge");
        try (var out = Files.newByteChannel(huge, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            out.position(1L << 30).write(ByteBuffer.wrap(new byte[] {'\n'})); // sparse: 1 GiB of NULs
        }
        Path fifo = dir.resolve("fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        Map<Path, String> cases = new LinkedHashMap<>();
        cases.put(fifo, "is a FIFO, not a regular file");
        cases.put(Files.createDirectory(dir.resolve("dir")), "is a directory, not a regular file");
        cases.put(Path.of("/dev/zero"), "is a character device, not a regular file");
        cases.put(huge, "is larger than " + LogLevelFile.MAX_BYTES + " bytes");
        try (LogCapture log = LogCapture.installed()) {
            for (Map.Entry<Path, String> at : cases.entrySet()) {
                Files.delete(file);
                Files.createSymbolicLink(file, at.getKey()); // a ConfigMap's key is a link too
                assertEquals(LogLevel.FINE, assertTimeoutPreemptively(Duration.ofSeconds(10), levels::check),
                        at.getKey().toString());
            }
            List<String> warnings = log.written().stream().filter(w -> w.level() == Level.WARNING)
                    .map(LogCapture.Written::text).toList();
            assertEquals(cases.size(), warnings.size(), warnings.toString());
            int i = 0;
            for (String why : cases.values()) {
                assertTrue(warnings.get(i).contains("log level file " + file) && warnings.get(i).contains(why)
                        && warnings.get(i).contains("the level stays fine"), warnings.get(i));
                i++;
            }
        }
        assertEquals(List.of(LogLevel.FINE), applied);
    }
}
