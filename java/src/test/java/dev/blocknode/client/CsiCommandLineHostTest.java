package dev.blocknode.client;

import dev.blocknode.testing.PluginHarness;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The command-line client against a real plugin: readable answers, status codes as exit codes. */
@Tag("host")
class CsiCommandLineHostTest {

    private record Run(int exit, String out, String err) {
    }

    private static Run client(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = CsiCommandLine.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void callsRpcsAndExitsWithTheStatusCode() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            String endpoint = "unix://" + plugin.plugin().server().socket();

            Run probe = client("--endpoint", endpoint, "Probe");
            assertEquals(0, probe.exit(), probe.err());
            assertTrue(probe.out().contains("ready {\n  value: true\n}"), probe.out());

            Run info = client("--endpoint=" + endpoint, "nodegetinfo");
            assertEquals(0, info.exit());
            assertTrue(info.out().contains("node_id: \"" + PluginHarness.NODE_ID + "\""), info.out());

            Run notFound = client("--endpoint", endpoint, "NodeGetVolumeStats",
                    "volume_id: \"nope\" volume_path: \"/x\"");
            assertEquals(5, notFound.exit(), "NOT_FOUND is 5");
            assertTrue(notFound.err().startsWith("NOT_FOUND: volume nope"), notFound.err());

            Path request = Files.createTempFile("bn-request", ".txtpb");
            try {
                Files.writeString(request, "volume_id: \"v\"\n");
                Run invalid = client("--endpoint", endpoint, "NodeUnpublishVolume", "@" + request);
                assertEquals(3, invalid.exit(), "INVALID_ARGUMENT is 3: " + invalid.err());
                assertTrue(invalid.err().contains("target_path"), invalid.err());
            } finally {
                Files.deleteIfExists(request);
            }
        }
    }

    @Test
    void usageErrorsExitTwo() {
        assertEquals(2, client("NoSuchRpc").exit());
        Run malformed = client("NodeGetInfo", "volume_id: ");
        assertEquals(2, malformed.exit());
        assertTrue(malformed.err().contains("not a valid NodeGetInfoRequest"), malformed.err());
        assertEquals(2, client().exit());
        Run help = client("--help");
        assertEquals(0, help.exit());
        assertTrue(help.out().contains("NodeStageVolume"), help.out());
    }
}
