package dev.blocknode.logging;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LogLevelFileUnitTest {

    @TempDir
    Path dir;

    private final List<LogLevel> applied = new ArrayList<>();

    private LogLevelFile watching(Path file, LogLevel fallback) {
        return new LogLevelFile(file, fallback, applied::add);
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
            assertTrue(warnings.get(1).contains("longer than " + LogLevelFile.MAX_BYTES + " bytes"), warnings.get(1));
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
    void watchSetsThePluginsLoggersAtOnce() throws IOException {
        Path file = Files.writeString(dir.resolve("level"), "fine");
        java.util.logging.Logger plugin = java.util.logging.Logger.getLogger("dev.blocknode");
        Level before = plugin.getLevel();
        try (LogLevelFile ignored = LogLevelFile.watch(file, LogLevel.INFO)) {
            assertEquals(Level.FINE, plugin.getLevel());
        } finally {
            plugin.setLevel(before);
        }
    }
}
