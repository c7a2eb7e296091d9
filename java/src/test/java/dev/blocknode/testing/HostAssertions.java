package dev.blocknode.testing;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountTable;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Checks that a test left nothing behind on the machine. */
public final class HostAssertions {

    private HostAssertions() {
    }

    public static List<Path> mountsUnder(Path root) throws IOException {
        return MountTable.read(Path.of("/proc/self/mountinfo")).stream()
                .map(MountEntry::mountPoint)
                .filter(p -> p.startsWith(root))
                .toList();
    }

    public static void assertNoMountsUnder(Path root) throws IOException {
        assertEquals(List.of(), mountsUnder(root), "mounts left under " + root);
    }

    /** Loop devices whose backing file lies under {@code dir}. */
    public static List<String> loopDevicesBackedUnder(Path dir) throws IOException {
        String out = new ProcessCommandRunner().runChecked(Command.of("losetup", "--list", "--noheadings",
                "--output", "NAME,BACK-FILE")).stdout();
        return out.lines().map(String::strip).filter(line -> {
            String[] fields = line.split("\\s+", 2);
            return fields.length == 2 && Path.of(fields[1]).startsWith(dir);
        }).toList();
    }

    public static void assertNoLoopDevicesUnder(Path dir) throws IOException {
        assertEquals(List.of(), loopDevicesBackedUnder(dir), "loop devices left over " + dir);
    }
}
