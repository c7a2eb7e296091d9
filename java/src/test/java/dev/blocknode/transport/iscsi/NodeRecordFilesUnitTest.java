package dev.blocknode.transport.iscsi;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class NodeRecordFilesUnitTest {

    private static final IscsiPath PATH = new IscsiPath("iqn.2003-01.org.example:t1", new Portal("127.0.0.1", 3260),
            "default");

    @Test
    void replacesAuthSettingsInTheIfaceRecordAndKeepsTheRest(@TempDir Path db) throws Exception {
        Path record = db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,3260,1/default");
        Files.createDirectories(record.getParent());
        Files.write(record, List.of("# BEGIN RECORD 2.1.8", "node.name = iqn.2003-01.org.example:t1",
                "node.session.auth.authmethod = None", "node.startup = manual", "# END RECORD"));
        NodeRecordFiles files = new NodeRecordFiles(db);
        files.writeSettings(PATH, Map.of("node.session.auth.authmethod", "CHAP", "node.session.auth.password", "pw"));

        List<String> lines = Files.readAllLines(record);
        assertEquals(1, lines.stream().filter(l -> l.startsWith("node.session.auth.authmethod")).count());
        assertEquals(Optional.of("CHAP"), files.readSetting(PATH, "node.session.auth.authmethod"));
        assertEquals(Optional.of("pw"), files.readSetting(PATH, "node.session.auth.password"));
        assertEquals(Optional.of("manual"), files.readSetting(PATH, "node.startup"));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(record)));
        try (var siblings = Files.list(record.getParent())) {
            assertEquals(1, siblings.count(), "no temp file left behind");
        }
        try (var target = Files.list(db.resolve("nodes/iqn.2003-01.org.example:t1"))) {
            assertEquals(List.of(record.getParent()), target.toList(), "no temp file left in the target's directory");
        }
    }

    @Test
    void oldLayoutWhereThePortalIsTheRecordFile(@TempDir Path db) throws Exception {
        Path record = db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,3260,-1");
        Files.createDirectories(record.getParent());
        Files.write(record, List.of("node.startup = manual"));
        new NodeRecordFiles(db).writeSettings(PATH, Map.of("node.session.auth.username", "u"));
        assertEquals(List.of("node.startup = manual", "node.session.auth.username = u"), Files.readAllLines(record));
    }

    @Test
    void aRecordMadeWithDashONewIsAFlatFileWithoutTpgt(@TempDir Path db) throws Exception {
        Path record = db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,3260");
        Files.createDirectories(record.getParent());
        Files.write(record, List.of("node.tpgt = -1"));
        Files.write(db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,32600"), List.of("other = port"));
        new NodeRecordFiles(db).writeSettings(PATH, Map.of("node.session.auth.username", "u"));
        assertEquals(List.of("node.tpgt = -1", "node.session.auth.username = u"), Files.readAllLines(record));
        assertEquals(List.of("other = port"),
                Files.readAllLines(db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,32600")));
    }

    @Test
    void anotherPortOrIfaceIsNotThisRecord(@TempDir Path db) throws Exception {
        Files.createDirectories(db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,3261,1"));
        Files.writeString(db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,3261,1/default"), "x = y\n");
        Files.createDirectories(db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,3260,1"));
        Files.writeString(db.resolve("nodes/iqn.2003-01.org.example:t1/127.0.0.1,3260,1/iface0"), "x = y\n");
        IOException e = assertThrows(IOException.class,
                () -> new NodeRecordFiles(db).writeSettings(PATH, Map.of("a", "b")));
        assertEquals(true, e.getMessage().contains("no node record"));
    }
}
