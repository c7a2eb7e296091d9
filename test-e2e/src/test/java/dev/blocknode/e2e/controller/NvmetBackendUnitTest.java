package dev.blocknode.e2e.controller;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The nvmet backend's configfs writes and losetup calls, against a plain directory standing in for
 * /sys/kernel/config/nvmet and a recording losetup (the VM tier runs it for real: test-e2e/vm/guest/sanity.sh).
 */
class NvmetBackendUnitTest {

    private static final String NQN = "nqn.2024-01.dev.blocknode:sanity";

    @TempDir
    Path nvmet;

    /** Records every argv; "losetup --find --show" answers the next loop device. */
    private static final class RecordingLosetup implements CommandRunner {
        final List<String> calls = new ArrayList<>();
        int next;

        @Override
        public CommandResult run(Command command) {
            String argv = String.join(" ", command.argv());
            calls.add(argv);
            return new CommandResult(0, argv.contains("--find") ? "/dev/loop" + next++ + "\n" : "", "");
        }
    }

    private final RecordingLosetup losetup = new RecordingLosetup();

    private String read(String relative) throws IOException {
        return Files.readString(nvmet.resolve(relative));
    }

    @Test
    void aSubsystemOnEveryPortalAndANamespacePerVolumeThenNothingLeft() throws IOException {
        Files.createDirectories(nvmet.resolve("subsystems"));
        Files.createDirectories(nvmet.resolve("ports"));
        NvmetBackend backend = NvmetBackend.start(losetup, NvmetBackendUnitTest::removeWithAttributes, nvmet, NQN,
                List.of("127.0.0.1:4420", "127.0.0.2:4420"), 21);

        assertEquals("1", read("subsystems/" + NQN + "/attr_allow_any_host"));
        assertEquals("127.0.0.2", read("ports/22/addr_traddr"));
        assertEquals("4420", read("ports/22/addr_trsvcid"));
        assertEquals(nvmet.resolve("subsystems/" + NQN),
                Files.readSymbolicLink(nvmet.resolve("ports/21/subsystems/" + NQN)));

        VolumeBackend.Placement a = backend.expose("a", Path.of("/srv/a.img"), 1 << 20);
        VolumeBackend.Placement b = backend.expose("b", Path.of("/srv/b.img"), 1 << 20);

        assertEquals("1", a.volumeContext().get("namespaceID"));
        assertEquals("2", b.volumeContext().get("namespaceID"));
        assertEquals(NQN, a.volumeContext().get("subsysNQN"));
        assertEquals("127.0.0.1:4420,127.0.0.2:4420", a.volumeContext().get("nvmePortals"));
        assertEquals("/dev/loop0", read("subsystems/" + NQN + "/namespaces/1/device_path"));
        assertEquals(a.volumeContext().get("namespaceUUID"), read("subsystems/" + NQN + "/namespaces/1/device_uuid"));
        assertFalse(a.volumeContext().get("namespaceUUID").equals(b.volumeContext().get("namespaceUUID")));
        assertEquals("1", read("subsystems/" + NQN + "/namespaces/2/enable"));

        backend.grow(a, Path.of("/srv/a.img"), 2 << 20);
        backend.withdraw(a, Path.of("/srv/a.img"));
        assertFalse(Files.exists(nvmet.resolve("subsystems/" + NQN + "/namespaces/1")));
        assertEquals("3", backend.expose("c", Path.of("/srv/c.img"), 1 << 20).volumeContext().get("namespaceID"),
                "an NSID is not handed out again at once");
        backend.withdraw(b, Path.of("/srv/b.img"));

        assertEquals(List.of("losetup --find --show /srv/a.img", "losetup --find --show /srv/b.img",
                "losetup --set-capacity /dev/loop0", "losetup --detach /dev/loop0",
                "losetup --find --show /srv/c.img", "losetup --detach /dev/loop1"), losetup.calls);
        backend.withdraw(new VolumeBackend.Placement("c", java.util.Map.of("namespaceID", "3")), Path.of("/srv/c.img"));
        backend.close();
        assertTrue(isEmpty(nvmet.resolve("ports")) && isEmpty(nvmet.resolve("subsystems")),
                () -> "nothing of it left: " + listing());
    }

    /** As rmdir on configfs: the attributes (and an emptied namespaces/ or subsystems/) go with the directory. */
    private static void removeWithAttributes(Path dir) throws IOException {
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    private String listing() {
        try (var walk = Files.walk(nvmet)) {
            return walk.map(nvmet::relativize).toList().toString();
        } catch (IOException e) {
            return e.toString();
        }
    }

    private static boolean isEmpty(Path dir) throws IOException {
        try (var entries = Files.list(dir)) {
            return entries.findAny().isEmpty();
        }
    }
}
