package dev.blocknode.multipath;

import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FindMultipathsUnitTest {

    /** The shape of {@code multipathd show config} (multipath-tools 0.9.4): tabs, quoted values, sections. */
    private static String config(String findMultipaths) {
        return "defaults {\n"
                + "\tverbosity 2\n"
                + "\tpolling_interval 1\n"
                + (findMultipaths == null ? "" : "\tfind_multipaths " + findMultipaths + "\n")
                + "\tfind_multipaths_timeout -10\n"
                + "}\n"
                + "blacklist {\n"
                + "\tdevnode \"!^(sd[a-z]|dasd[a-z]|nvme[0-9])\"\n"
                + "}\n"
                + "devices {\n"
                + "\tdevice {\n"
                + "\t\tvendor \"find_multipaths\"\n"
                + "\t}\n"
                + "}\n";
    }

    @Test
    void noOffAndGreedyTakeEveryPath() {
        for (String value : new String[] {"\"off\"", "\"no\"", "no", "\"greedy\"", "GREEDY"}) {
            assertTrue(FindMultipaths.takesEveryPath(config(value)), value);
        }
    }

    @Test
    void strictYesSmartAndUnknownNeedTheWwidsFile() {
        for (String value : new String[] {"\"strict\"", "\"on\"", "yes", "\"smart\"", "\"later\"", "\"\""}) {
            assertFalse(FindMultipaths.takesEveryPath(config(value)), value);
        }
    }

    @Test
    void aConfigWithoutTheKeywordOrUnreadableIsTheDefaultStrict() {
        assertEquals(Optional.empty(), FindMultipaths.valueIn(config(null)), "find_multipaths_timeout is another key");
        assertFalse(FindMultipaths.takesEveryPath(config(null)));
        assertFalse(FindMultipaths.takesEveryPath(""));
        assertFalse(FindMultipaths.takesEveryPath("error -111 receiving packet"));
    }

    @Test
    void onlyTheDefaultsSectionCounts() {
        assertEquals(Optional.empty(), FindMultipaths.valueIn("overrides {\n\tfind_multipaths \"greedy\"\n}\n"));
        assertEquals(Optional.of("greedy"), FindMultipaths.valueIn(config("\"greedy\"")));
    }
}
