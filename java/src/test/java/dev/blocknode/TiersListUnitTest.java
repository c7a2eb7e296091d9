package dev.blocknode;

import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * scripts/tiers.tsv is the one list of the test tiers: the Makefile reads it for make help and make test, and the
 * tables in README.md and CONTRIBUTING.md are rendered from it here. Fails when a table is stale ({@code make docs}
 * rewrites them) or when the list names a target the Makefile does not have.
 */
class TiersListUnitTest {

    private static final String BLOCK = "tiers";

    record Tier(String name, String target, boolean root, String time, String inTest, String proves, String leader) {

        String command() {
            return "`make " + target + "`";
        }

        String inMakeTest() {
            return switch (inTest) {
                case "maven" -> "yes, first beside the " + leader + " tier, in one Maven run (`make maven-test`)";
                case "yes" -> "yes";
                case "beside" -> "yes, beside the " + leader + " tier";
                default -> "no";
            };
        }
    }

    static List<Tier> tiers() throws IOException {
        List<Tier> tiers = new ArrayList<>();
        for (String line : Files.readAllLines(GeneratedDocs.repositoryRoot().resolve("scripts/tiers.tsv"))) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\t", -1);
            assertEquals(6, f.length, "scripts/tiers.tsv: six tab-separated columns: " + line);
            for (String field : f) {
                // Each field lands in a Markdown table cell and in make help's awk.
                assertTrue(!field.isBlank() && !field.contains("|"), "scripts/tiers.tsv: empty field or | in: " + line);
            }
            assertTrue(Set.of("yes", "no").contains(f[2]), "root is yes or no: " + line);
            assertTrue(Set.of("maven", "yes", "beside", "no").contains(f[4]), "in-test is maven, yes, beside or no: " + line);
            // scripts/test-tiers.sh runs the "beside" tiers one after another, at the same time as the last "yes"
            // tier listed before them: a beside tier follows that tier or another beside tier.
            Tier previous = tiers.isEmpty() ? null : tiers.get(tiers.size() - 1);
            boolean followsAGroup = previous != null && Set.of("yes", "beside").contains(previous.inTest());
            assertTrue(!f[4].equals("beside") || followsAGroup,
                    "a beside tier follows a tier make test runs by target, or another beside tier: " + line);
            String leader = previous == null ? "" : previous.inTest().equals("beside") ? previous.leader() : previous.name();
            tiers.add(new Tier(f[0], f[1], f[2].equals("yes"), f[3], f[4], f[5], leader));
        }
        // The maven tiers run beside the first tier make test runs by target (scripts/test-tiers.sh).
        String firstLeader = tiers.stream().filter(t -> t.inTest().equals("yes")).map(Tier::name).findFirst().orElse("");
        tiers.replaceAll(t -> t.inTest().equals("maven")
                ? new Tier(t.name(), t.target(), t.root(), t.time(), t.inTest(), t.proves(), firstLeader)
                : t);
        return tiers;
    }

    static String readmeTable(List<Tier> tiers) {
        StringBuilder out = new StringBuilder("| Tier | Run it alone | Root | Time (warm) | In `make test` |\n"
                + "| --- | --- | --- | --- | --- |\n");
        for (Tier t : tiers) {
            out.append("| ").append(t.name()).append(" | ").append(t.command()).append(" | ")
                    .append(t.root() ? "yes" : "no").append(" | ").append(t.time()).append(" | ")
                    .append(t.inMakeTest()).append(" |\n");
        }
        return out.toString();
    }

    static String contributingTable(List<Tier> tiers) {
        StringBuilder out = new StringBuilder(
                "| Tier | Run it alone | Root | Time (warm) | In `make test` | A pass proves |\n"
                        + "| --- | --- | --- | --- | --- | --- |\n");
        for (Tier t : tiers) {
            out.append("| ").append(t.name()).append(" | ").append(t.command()).append(" | ")
                    .append(t.root() ? "yes" : "no").append(" | ").append(t.time()).append(" | ")
                    .append(t.inMakeTest()).append(" | ").append(t.proves()).append(" |\n");
        }
        return out.toString();
    }

    @Test
    void theReadmeTableIsCurrent() throws IOException {
        GeneratedDocs.checkBlock("README.md", BLOCK, readmeTable(tiers()));
    }

    @Test
    void theContributingTableIsCurrent() throws IOException {
        GeneratedDocs.checkBlock("CONTRIBUTING.md", BLOCK, contributingTable(tiers()));
    }

    @Test
    void everyTierIsAMakeTarget() throws IOException {
        Path makefile = GeneratedDocs.repositoryRoot().resolve("Makefile");
        Set<String> targets = Files.readAllLines(makefile).stream()
                .map(Pattern.compile("^([a-z][a-z0-9-]*):")::matcher)
                .filter(m -> m.find())
                .map(m -> m.group(1))
                .collect(Collectors.toSet());
        for (Tier t : tiers()) {
            assertTrue(targets.contains(t.target()), "scripts/tiers.tsv names make " + t.target()
                    + ", which the Makefile does not define");
        }
    }

    @Test
    void mavenRunsUnitAndHostFirst() throws IOException {
        // make test's one Maven test run (make maven-test) runs both, first beside the first tier it calls by target.
        List<String> maven = tiers().stream().filter(t -> t.inTest().equals("maven")).map(Tier::name).toList();
        assertEquals(List.of("unit", "host"), maven);
        assertEquals(maven, tiers().subList(0, 2).stream().map(Tier::name).toList());
    }
}
