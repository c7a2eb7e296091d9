package dev.blocknode.config;

import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

/**
 * docs/reference/flags.md is rendered from {@link FlagParser#FLAGS}, the definitions the parser itself reads.
 * Fails when the page is stale; {@code make docs} (BLOCKNODE_WRITE_DOCS=1) rewrites it.
 */
class FlagsReferenceUnitTest {

    static String page() {
        return GeneratedDocs.header("Flags", "FlagParser.FLAGS (java/src/main/java/dev/blocknode/config/FlagParser.java)")
                + """
                The plugin's command line: `java -jar blocknode.jar [flags]`, the image's entrypoint. Each flag is
                `--name value` or `--name=value`; an unknown flag or a bad value stops the plugin at start with a
                message naming the flag. In the DaemonSet the chart sets them from its values
                ([Helm values](helm-values.md)). `blocknode --help` prints the same list and `blocknode --version` the
                version, from the image ([The command line](cli.md): in the pod, on a node, on a laptop).

                """
                + FlagParser.markdownTable();
    }

    @Test
    void flagsPageIsCurrent() throws Exception {
        GeneratedDocs.check("docs/reference/flags.md", page());
    }
}
