package dev.blocknode.client;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SubcommandFlagsUnitTest {

    private static final Set<String> NAMES = Set.of("--state-dir", "--volume", "-o", "--output");

    private static SubcommandFlags parse(String... args) throws SubcommandFlags.UsageException {
        return SubcommandFlags.parse("status", List.of(args), NAMES);
    }

    private static String refusal(String... args) {
        return assertThrows(SubcommandFlags.UsageException.class, () -> parse(args)).getMessage();
    }

    @Test
    void takesBothSpellingsOfAValue() throws Exception {
        SubcommandFlags flags = parse("--state-dir=/s", "--volume", "v=1", "-o", "json");
        assertEquals(Optional.of("/s"), flags.get("--state-dir"));
        assertEquals(Optional.of("v=1"), flags.get("--volume"));
        assertTrue(flags.json("status"));
        assertFalse(flags.help());
        assertEquals(Optional.empty(), parse().get("--volume"));
        assertFalse(parse().json("status"));
        assertTrue(parse("--output=json").json("status"));
    }

    @Test
    void helpWinsOverEverythingAfterIt() throws Exception {
        assertTrue(parse("--help", "--bogus").help());
        assertTrue(parse("-o", "json", "-h").help());
    }

    @Test
    void refusesWhatItDoesNotKnowNamingItEscaped() {
        assertEquals("blocknode status: unknown flag --bogus (see status --help)", refusal("--bogus=1"));
        assertEquals("blocknode status: unexpected argument \"a\\nb\" (see status --help)", refusal("a\nb"));
        assertEquals("blocknode status: flag --volume needs a value (see status --help)", refusal("--volume"));
        assertEquals("blocknode status: -o must be text or json, got \"yaml\"",
                assertThrows(SubcommandFlags.UsageException.class, () -> parse("-o", "yaml").json("status"))
                        .getMessage());
    }

    @Test
    void takesSwitchesAndAsManyOperandsAsAllowed() throws Exception {
        SubcommandFlags flags = SubcommandFlags.parse("pv", List.of("--claim", "--volume=v", "-"), NAMES,
                Set.of("--claim"), 1);
        assertTrue(flags.has("--claim"));
        assertEquals(List.of("-"), flags.operands());
        assertFalse(SubcommandFlags.parse("pv", List.of("a.csv"), NAMES, Set.of("--claim"), 1).has("--claim"));
        String refusal = assertThrows(SubcommandFlags.UsageException.class, () -> SubcommandFlags.parse("pv",
                List.of("a.csv", "b.csv"), NAMES, Set.of(), 1)).getMessage();
        assertEquals("blocknode pv: unexpected argument \"b.csv\" (see pv --help)", refusal);
        // status and doctor take no operand, "-" included.
        assertTrue(refusal("-").contains("unexpected argument \"-\""), refusal("-"));
    }
}
