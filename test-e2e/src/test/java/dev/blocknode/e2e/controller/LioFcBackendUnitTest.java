package dev.blocknode.e2e.controller;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tcm_fc backend's configfs tree, against a plain directory standing in for /sys/kernel/config/target (the
 * VM tier runs it for real: test-e2e/vm/guest/sanity-fc.sh).
 */
class LioFcBackendUnitTest {

    private static final List<String> ARRAY = List.of("0x200002fc00000002", "20:00:02:FC:00:00:00:04");
    private static final List<String> NODE = List.of("200002fc00000001", "0x200002fc00000003");
    private static final String PORT_1 = "fc/20:00:02:fc:00:00:00:02/tpgt_1";
    private static final String PORT_2 = "fc/20:00:02:fc:00:00:00:04/tpgt_1";

    @TempDir
    Path target;

    /** What target_core_mod and tcm_fc show before any configuration. */
    @org.junit.jupiter.api.BeforeEach
    void modulesLoaded() throws IOException {
        Files.createDirectories(target.resolve("core"));
        Files.createDirectories(target.resolve("fc"));
    }

    private String read(String relative) throws IOException {
        return Files.readString(target.resolve(relative));
    }

    private Path link(String relative) throws IOException {
        return Files.readSymbolicLink(target.resolve(relative));
    }

    @Test
    void aTpgPerArrayPortWithAnAclPerNodePortAndALunPerVolumeOnAllOfThemThenNothingLeft() throws IOException {
        LioFcBackend backend = LioFcBackend.start(LioFcBackendUnitTest::removeWithAttributes, target, ARRAY, NODE);
        for (String tpg : List.of(PORT_1, PORT_2)) {
            for (String acl : List.of("20:00:02:fc:00:00:00:01", "20:00:02:fc:00:00:00:03")) {
                assertTrue(Files.isDirectory(target.resolve(tpg + "/acls/" + acl)), tpg + " " + acl);
            }
        }

        VolumeBackend.Placement a = backend.expose("a", Path.of("/srv/bn-fc/sanity/a.img"), 64 << 20);
        VolumeBackend.Placement b = backend.expose("b", Path.of("/srv/bn-fc/sanity/b.img"), 64 << 20);

        assertEquals(Map.of("transport", "fc", "targetWWNs", "20:00:02:fc:00:00:00:02,20:00:02:fc:00:00:00:04",
                "lun", "0", "wwids", a.volumeContext().get("wwids")), a.volumeContext());
        assertEquals("1", b.volumeContext().get("lun"));
        String store = "core/" + LioFcBackend.HBA + "/vol1";
        assertEquals("fd_dev_name=/srv/bn-fc/sanity/a.img,fd_dev_size=67108864", read(store + "/control"));
        assertEquals("1", read(store + "/enable"));
        String serial = read(store + "/wwn/vpd_unit_serial");
        assertTrue(serial.matches("[0-9a-f]{25}"), serial);
        assertEquals("36001405" + serial, a.volumeContext().get("wwids"), "LIO's NAA: OUI 001405, the serial's hex");
        assertNotEquals(a.volumeContext().get("wwids"), b.volumeContext().get("wwids"));
        for (String tpg : List.of(PORT_1, PORT_2)) {
            assertEquals(target.resolve(store), link(tpg + "/lun/lun_0/store"));
            assertEquals(target.resolve(tpg + "/lun/lun_0"), link(tpg + "/acls/20:00:02:fc:00:00:00:03/lun_0/map"));
        }

        backend.grow(a, Path.of("/srv/bn-fc/sanity/a.img"), 96 << 20);
        assertEquals("fd_dev_size=100663296", read(store + "/control"));

        backend.withdraw(a, Path.of("/srv/bn-fc/sanity/a.img"));
        assertTrue(Files.notExists(target.resolve(PORT_1 + "/lun/lun_0")) && Files.notExists(target.resolve(store)));
        assertTrue(Files.notExists(target.resolve(PORT_2 + "/acls/20:00:02:fc:00:00:00:01/lun_0")));
        VolumeBackend.Placement c = backend.expose("c", Path.of("/srv/bn-fc/sanity/c.img"), 64 << 20);
        assertEquals("2", c.volumeContext().get("lun"), "a LUN number is not handed out again at once");
        backend.withdraw(b, Path.of("/srv/bn-fc/sanity/b.img"));
        backend.withdraw(c, Path.of("/srv/bn-fc/sanity/c.img"));
        backend.withdraw(c, Path.of("/srv/bn-fc/sanity/c.img")); // already gone: fine
        backend.close();

        assertEquals(List.of("core", "fc"), listing(), "nothing of it left");
    }

    @Test
    void aTpgThatExistsIsNotOursAndAFailedStartLeavesNothing() throws IOException {
        Files.createDirectories(target.resolve(PORT_2));
        assertThrows(IOException.class,
                () -> LioFcBackend.start(LioFcBackendUnitTest::removeWithAttributes, target, ARRAY, NODE));
        assertEquals(List.of("core", PORT_2), listing(), "only what was there before");
    }

    @Test
    void lunNumbersGoRoundWithoutTakingOneInUse() throws IOException {
        LioFcBackend backend = LioFcBackend.start(LioFcBackendUnitTest::removeWithAttributes, target, ARRAY, NODE);
        VolumeBackend.Placement first = backend.expose("v0", Path.of("/f0"), 1 << 20);
        for (int i = 1; i <= LioFcBackend.MAX_LUN; i++) {
            VolumeBackend.Placement p = backend.expose("v" + i, Path.of("/f" + i), 1 << 20);
            if (i > 1) {
                backend.withdraw(p, Path.of("/f" + i));
            }
        }
        assertEquals("2", backend.expose("again", Path.of("/g"), 1 << 20).volumeContext().get("lun"),
                "after 255 it goes round to the lowest free number; 0 and 1 are still in use");
        assertEquals("0", first.volumeContext().get("lun"));
    }

    /** As rmdir on configfs: the attributes (and links) go with the directory. */
    private static void removeWithAttributes(Path dir) throws IOException {
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    /** Every leaf under the target dir, relative. */
    private List<String> listing() throws IOException {
        try (var walk = Files.walk(target)) {
            return walk.filter(p -> !p.equals(target))
                    .filter(p -> {
                        try (var entries = Files.isDirectory(p) ? Files.list(p) : java.util.stream.Stream.<Path>empty()) {
                            return !Files.isDirectory(p) || entries.findAny().isEmpty();
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    })
                    .map(p -> target.relativize(p).toString()).sorted().toList();
        }
    }
}
