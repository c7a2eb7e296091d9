package dev.blocknode.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/** This process's effective Linux capabilities, from /proc/self/status. */
public final class Capabilities {

    public static final int SYS_RESOURCE = 24;

    private Capabilities() {
    }

    public static Set<Integer> effective() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("CapEff:")) {
                long mask = Long.parseUnsignedLong(line.substring("CapEff:".length()).strip(), 16);
                Set<Integer> caps = new HashSet<>();
                for (int bit = 0; bit < 64; bit++) {
                    if ((mask & (1L << bit)) != 0) {
                        caps.add(bit);
                    }
                }
                return caps;
            }
        }
        return Set.of();
    }
}
