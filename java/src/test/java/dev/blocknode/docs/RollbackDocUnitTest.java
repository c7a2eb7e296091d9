package dev.blocknode.docs;

import dev.blocknode.state.RecordStore;
import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/operations.md tells an operator when a rollback is safe by the staging records' format version; the version
 * it names is the one the plugin writes, so a format bump cannot leave the page promising a safe rollback.
 */
class RollbackDocUnitTest {

    @Test
    void theOperationsPageNamesTheFormatVersionThePluginWrites() throws IOException {
        String page = Files.readString(GeneratedDocs.repositoryRoot().resolve("docs/operations.md"));
        Matcher today = Pattern.compile("`format_version`, today `(\\d+)`").matcher(page);
        assertTrue(today.find(), "docs/operations.md names the staging records' format version (today `N`)");
        assertEquals(RecordStore.FORMAT_VERSION, Integer.parseInt(today.group(1)),
                "docs/operations.md's rollback rules name another format version than RecordStore.FORMAT_VERSION");
        assertTrue(page.contains("Every build so far writes format version " + RecordStore.FORMAT_VERSION + ";"),
                "docs/operations.md says which format version every build so far writes");
    }
}
