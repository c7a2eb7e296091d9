package dev.blocknode.os;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The host paths that depend on what the host has: open-iscsi's database, under one root a test can move. */
class HostPathsUnitTest {

    @TempDir
    Path root;

    private HostPaths paths() {
        return new HostPaths(root.resolve("sys"), root.resolve("dev"), root.resolve("proc"), root.resolve("etc"));
    }

    @Test
    void theIscsiDatabaseIsEtcIscsiUnlessOnlyVarLibHasNodes() throws IOException {
        assertEquals(root.resolve("etc/iscsi"), paths().iscsiDatabase(), "neither: the image's own (Debian) place");

        Files.createDirectories(root.resolve("var/lib/iscsi/nodes"));
        assertEquals(root.resolve("var/lib/iscsi"), paths().iscsiDatabase(), "a host open-iscsi built for /var/lib");

        Files.createDirectories(root.resolve("etc/iscsi"));
        assertEquals(root.resolve("etc/iscsi"), paths().iscsiDatabase(), "/etc/iscsi wins whenever it exists");
    }
}
