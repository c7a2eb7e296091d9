package dev.blocknode.transport.iscsi;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyProblems;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IscsiVolumeSpecUnitTest {

    private static Map<String, String> valid() {
        Map<String, String> context = new HashMap<>();
        context.put("targetPortal", "10.0.0.5");
        context.put("iqn", "iqn.2003-01.org.linux-iscsi.array:sn.1234");
        context.put("lun", "3");
        return context;
    }

    private static IscsiVolumeSpec parse(Map<String, String> context) throws VolumeException {
        return IscsiVolumeSpec.from(new AttachRequest("vol", context, Map.of(), Secrets.NONE));
    }

    private static void assertRefused(Map<String, String> context, String key) {
        VolumeException e = assertThrows(VolumeException.class, () -> parse(context));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertTrue(e.getMessage().contains(key), e.getMessage());
    }

    @Test
    void minimalSpecDefaultsPortAndIface() throws Exception {
        IscsiVolumeSpec spec = parse(valid());
        assertEquals(List.of(new Portal("10.0.0.5", 3260)), spec.portals());
        assertEquals(3, spec.lun());
        assertEquals("default", spec.iface());
        assertEquals(Optional.empty(), spec.wwid());
        assertEquals(List.of(new IscsiPath("iqn.2003-01.org.linux-iscsi.array:sn.1234", new Portal("10.0.0.5", 3260),
                "default")), spec.paths());
    }

    @ParameterizedTest
    @ValueSource(strings = {"10.0.0.6:3260,10.0.0.7", "[\"10.0.0.6:3260\", \"10.0.0.7\"]", "[10.0.0.6, 10.0.0.7:3260]"})
    void extraPortalsInEveryCommonSpelling(String portals) throws Exception {
        Map<String, String> context = valid();
        context.put("portals", portals);
        assertEquals(List.of(new Portal("10.0.0.5", 3260), new Portal("10.0.0.6", 3260), new Portal("10.0.0.7", 3260)),
                parse(context).portals());
    }

    @Test
    void extraIpv6PortalsInBracketsAreNotTakenForAList() throws Exception {
        Map<String, String> context = valid();
        context.put("portals", "[fd00::6]:3260,[fd00::7]");
        assertEquals(List.of(new Portal("10.0.0.5", 3260), new Portal("fd00::6", 3260), new Portal("fd00::7", 3260)),
                parse(context).portals());
    }

    @Test
    void duplicatePortalsCollapse() throws Exception {
        Map<String, String> context = valid();
        context.put("portals", "10.0.0.5:3260, 10.0.0.5");
        assertEquals(1, parse(context).portals().size());
    }

    @Test
    void everyRequiredKeyIsNamedWhenMissing() {
        for (String key : List.of("targetPortal", "iqn", "lun")) {
            Map<String, String> context = valid();
            context.remove(key);
            assertRefused(context, key);
        }
    }

    @ParameterizedTest
    @CsvSource({"iqn,not-an-iqn", "iqn,iqn.2003-1.org.x", "lun,-1", "lun,4294967296", "lun,three",
            "targetPortal,10.0.0.5:99999", "targetPortal,10.0.0.5:", "targetPortal,host name", "iface,bad/iface",
            "portals,10.0.0.6:x"})
    void malformedValuesAreRefusedNamingTheKey(String key, String value) {
        Map<String, String> context = valid();
        context.put(key, value);
        assertRefused(context, key);
    }

    /**
     * What open-iscsi would join into a path of its database or take for a file of its ifaces directory: an IQN whose
     * part after the colon holds a slash or a control character, an iface of dots, a portal longer than a host name.
     */
    @Test
    void valuesThatWouldBePathsOrEscapesAreRefused() {
        for (String[] bad : new String[][]{{"iqn", "iqn.2003-01.org.example:t1/../../../etc"},
                {"iqn", "iqn.2003-01.org.example:t1\u001b[2J"}, {"iqn", "iqn.2003-01.org.example:t1\u0000"},
                {"iqn", "iqn.2003-01.org.example:" + "a".repeat(200)}, {"iface", ".."}, {"iface", "."},
                {"targetPortal", "a".repeat(254) + ":3260"}}) {
            Map<String, String> context = valid();
            context.put(bad[0], bad[1]);
            assertRefused(context, bad[0]);
        }
        Map<String, String> context = valid();
        context.put("iqn", "iqn.2000-01.com.synology:DiskStation.Target_1.abc");
        context.put("iface", "iface.eth1");
        assertDoesNotThrow(() -> parse(context), "upper case, underscores and dots are names in the field");
    }

    @Test
    void euiAndNaaNamesAndUppercaseAreAccepted() throws Exception {
        Map<String, String> context = valid();
        context.put("iqn", "EUI.0123456789ABCDEF");
        assertEquals("eui.0123456789abcdef", parse(context).iqn());
        context.put("iqn", "naa.52004567ba64678d");
        assertEquals("naa.52004567ba64678d", parse(context).iqn());
    }

    @Test
    void ipv6Portals() {
        assertEquals(new Portal("fd00::5", 3261), Portal.parse("[fd00::5]:3261"));
        assertEquals(new Portal("fd00::5", 3260), Portal.parse("fd00::5"));
        assertEquals("[fd00::5]:3260", Portal.parse("[FD00::5]").toString());
        assertThrows(IllegalArgumentException.class, () -> Portal.parse("[fd00::5"));
    }

    @Test
    void aWwidThatNoLunCanReportIsRefusedBeforeAnythingIsAttached() {
        for (String wwid : List.of("3600-not-hex", "36001405abcdef0123456789abcdef01", "naa.6001405")) {
            Map<String, String> context = valid();
            context.put("wwid", wwid);
            assertRefused(context, "volume_context.wwid \"" + wwid + "\" is not a WWID");
        }
    }

    @Test
    void aRefusedStageNamesEveryMalformedKey() {
        Map<String, String> context = valid();
        context.put("targetPortal", "10.0.0.5:0");
        context.put("iqn", "not-an-iqn");
        context.put("lun", "-1");
        context.put("wwid", "3600");
        VolumeException e = assertThrows(VolumeException.class, () -> parse(context));
        for (String key : List.of("targetPortal", "iqn", "lun", "wwid")) {
            assertTrue(e.getMessage().contains("volume_context." + key + " \""), key + ": " + e.getMessage());
        }
    }

    @Test
    void aStageStillTakesAnIqnInCapitalsWhichANewVolumeIsAskedToWriteInLowerCase() throws Exception {
        Map<String, String> context = valid();
        context.put("iqn", "iqn.2003-01.org.Linux-iSCSI.array:sn.1234");
        assertEquals("iqn.2003-01.org.linux-iscsi.array:sn.1234", parse(context).iqn());
        KeyProblems problems = new KeyProblems(KeyProblems.Reading.NEW_VOLUME);
        IscsiVolumeSpec.read(new AttachRequest("vol", context, Map.of(), Secrets.NONE), problems);
        assertEquals(1, problems.size(), problems.list().toString());
        assertTrue(problems.list().get(0).contains("has capitals: write it in lower case"), problems.list().toString());
    }
}
