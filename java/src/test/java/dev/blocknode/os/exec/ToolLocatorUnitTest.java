package dev.blocknode.os.exec;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ToolLocatorUnitTest {

    @Test
    void findsLsOnTheSearchPath() {
        Optional<Path> ls = ToolLocator.find("ls");
        assertTrue(ls.isPresent());
        Path path = ls.get();
        assertTrue(path.isAbsolute(), path.toString());
        assertEquals("ls", path.getFileName().toString());
        assertTrue(Files.isRegularFile(path) && Files.isExecutable(path), path.toString());
        assertTrue(List.of(ToolLocator.SEARCH_PATH.split(":")).contains(path.getParent().toString()),
                path.toString());
    }

    @Test
    void doesNotFindAMissingTool() {
        assertEquals(Optional.empty(), ToolLocator.find("no-such-tool-xyz"));
    }

    @Test
    void aDirectoryIsNotATool() {
        // /usr/bin/.. and the like exist but are directories.
        assertEquals(Optional.empty(), ToolLocator.find(".."));
        assertEquals(Optional.empty(), ToolLocator.find("."));
    }

    @Test
    void searchPathIsAbsoluteDirectoriesOnly() {
        for (String dir : ToolLocator.SEARCH_PATH.split(":")) {
            assertTrue(Path.of(dir).isAbsolute(), dir);
        }
    }

    @Test
    void missingListsOnlyTheAbsentToolsInOrder() {
        assertEquals(List.of("no-such-tool-xyz", "no-such-tool-abc"),
                ToolLocator.missing(List.of("no-such-tool-xyz", "ls", "no-such-tool-abc", "cat")));
        assertEquals(List.of(), ToolLocator.missing(List.of("ls", "cat")));
        assertEquals(List.of(), ToolLocator.missing(List.of()));
    }
}
