package dev.blocknode;

import dev.blocknode.testing.TerminalText;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the plugin prints instead of starting: the flags' refusals before it logs anything, and what {@code --help}
 * and {@code --version} ask for.
 */
class MainUnitTest {

    /**
     * The refusals of {@code --topology $'k\u202e=v'} and {@code --repair-interval $'1s\n'} printed the
     * right-to-left override and the line break raw; each is one escaped line now.
     */
    @Test
    void aRefusedFlagIsOneEscapedLine() {
        String[][] cases = {
                {"--topology", "k\u202e=v", "k\\u202e"},
                {"--repair-interval", "1s\n", "\"1s\\n\""},
                {"--socket-mode", "0\u001b[2J\nFORGED", "0\\x1b[2J\\nFORGED"},
        };
        for (String[] flag : cases) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertTrue(Main.parseOrRefuse(new String[]{"--node-id", "n1", flag[0], flag[1]},
                    new PrintStream(err, true, StandardCharsets.UTF_8)).isEmpty(), flag[0]);
            String printed = err.toString(StandardCharsets.UTF_8);
            assertTrue(printed.startsWith("blocknode: ") && printed.endsWith("\n"), printed);
            assertEquals(1, printed.lines().count(), printed);
            assertTrue(printed.contains(flag[2]), printed);
            TerminalText.assertSafe(printed);
        }
    }

    /**
     * {@code blocknode --version} was refused ("flag --version needs a value"); it prints the version the
     * jar was built at (what a release stamps, GetPluginInfo's vendor_version) and starts nothing.
     */
    @Test
    void versionPrintsTheJarsVersionAndStartsNothing() {
        assertTrue(Version.current().matches("\\d+\\.\\d+\\.\\d+(-[0-9A-Za-z.-]+)?"), Version.current());
        for (String[] args : new String[][]{{"--version"}, {"--node-id", "n1", "--version"}}) {
            assertEquals("blocknode " + Version.current() + "\n", Main.information(args).orElseThrow(),
                    String.join(" ", args));
        }
        assertTrue(Main.information(new String[]{"--help"}).orElseThrow().contains("--version"));
        assertFalse(Main.information(new String[]{"--node-id", "n1"}).isPresent(), "a start prints nothing first");
    }
}
