package dev.blocknode.scsi;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WwidUnitTest {

    private static final String NAA = "60014052e3c1d6a5b4c34b58a1f2e3d4";

    // ---- spellings --------------------------------------------------------------------------------

    @Test
    void kernelNaaBecomesMultipathThreePrefixed() {
        Wwid wwid = Wwid.fromSysfs("naa." + NAA.toUpperCase() + "\n");
        assertEquals(Wwid.Type.NAA, wwid.type());
        assertEquals(NAA, wwid.value());
        assertEquals("3" + NAA, wwid.multipathForm());
        assertEquals("naa." + NAA, wwid.sysfsForm());
        assertEquals("3" + NAA, wwid.toString());
    }

    @Test
    void kernelEuiBecomesTwoPrefixed() {
        Wwid wwid = Wwid.parse("eui.0025385B71B01234");
        assertEquals(Wwid.Type.EUI64, wwid.type());
        assertEquals("20025385b71b01234", wwid.multipathForm());
        assertEquals("eui.0025385b71b01234", wwid.sysfsForm());
    }

    @Test
    void kernelT10BecomesOnePrefixedWithBlankRunsSqueezed() {
        Wwid kernel = Wwid.parse("t10.ATA     QEMU HARDDISK                           QM00001");
        assertEquals(Wwid.Type.T10, kernel.type());
        assertEquals("1ATA_QEMU_HARDDISK_QM00001", kernel.multipathForm());
        Wwid multipath = Wwid.parse("1ATA_QEMU_HARDDISK_QM00001");
        assertEquals(Wwid.Type.T10, multipath.type());
        assertTrue(kernel.matches(multipath));
        assertTrue(multipath.matches(kernel));
        assertEquals(kernel, multipath);
        assertTrue(kernel.matches(Wwid.parse("1ata_qemu_harddisk_qm00001")));
        assertFalse(kernel.matches(Wwid.parse("1ATA_QEMU_HARDDISK_QM00002")));
    }

    @Test
    void multipathFormsParseToTheirTypes() {
        assertEquals(Wwid.Type.NAA, Wwid.parse("3" + NAA).type());
        assertEquals(NAA, Wwid.parse("3" + NAA).value());
        assertEquals(Wwid.Type.EUI64, Wwid.parse("20025385b71b01234").type());
        assertEquals(Wwid.Type.NAME, Wwid.parse("8iqn.2003-01.org.linux-iscsi.target:lun1").type());
        assertEquals("8iqn.2003-01.org.linux-iscsi.target:lun1",
                Wwid.parse("8iqn.2003-01.org.linux-iscsi.target:lun1").multipathForm());
    }

    @Test
    void scsiNameStringsThatSpellNaaOrEuiAreThoseTypes() {
        assertEquals(Wwid.naa(NAA), Wwid.name("naa." + NAA));
        assertEquals(Wwid.eui64("0025385b71b01234"), Wwid.name("EUI.0025385B71B01234"));
        Wwid iqn = Wwid.parse("iqn.2003-01.org.linux-iscsi.host:sn.1234");
        assertEquals(Wwid.Type.NAME, iqn.type());
        assertEquals("8iqn.2003-01.org.linux-iscsi.host:sn.1234", iqn.multipathForm());
    }

    // ---- what users type --------------------------------------------------------------------------

    @Test
    void comparisonIgnoresCaseAndTheOptionalTypePrefix() {
        Wwid device = Wwid.fromSysfs("naa." + NAA);
        for (String typed : List.of("3" + NAA, "3" + NAA.toUpperCase(), "naa." + NAA.toUpperCase(), NAA,
                NAA.toUpperCase(), "0x" + NAA, "  NAA." + NAA + "  ")) {
            Wwid user = Wwid.parse(typed);
            assertTrue(device.matches(user), typed);
            assertTrue(user.matches(device), typed);
        }
        assertEquals(Wwid.Type.UNTYPED, Wwid.parse(NAA).type());
        assertEquals(NAA, Wwid.parse("0X" + NAA.toUpperCase()).value());
    }

    @Test
    void differentDesignatorsOrConflictingTypesDoNotMatch() {
        Wwid device = Wwid.naa(NAA);
        assertFalse(device.matches(Wwid.naa(NAA.replace('d', 'e'))));
        assertFalse(device.matches(Wwid.eui64(NAA)), "same digits, but an EUI-64 is another identifier");
        assertFalse(device.matches(Wwid.naa(NAA.substring(0, 16))), "a prefix is not the same WWID");
        assertNotEquals(Wwid.naa(NAA), Wwid.eui64(NAA));
        assertTrue(device.matchesAny(List.of(Wwid.eui64("0011"), Wwid.parse("3" + NAA))));
        assertFalse(device.matchesAny(List.of()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "naa.", "naa.xyz", "naa.600", "3600x", "2zz", "eui.12 34", "t10.  ",
            "5" + "60014052e3c1d6a5b4c34b58a1f2e3d4", "hello", "0x", "0x123"})
    void malformedWwidsAreRefused(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Wwid.parse(text));
        assertTrue(e.getMessage() != null && !e.getMessage().isBlank());
    }

    // ---- VPD page 0x83 ----------------------------------------------------------------------------

    @Test
    void parsesAHandBuiltPageWithAnNaaType3Designator() {
        byte[] page = Vpd.page(Vpd.naa(NAA));
        assertEquals(4 + 4 + 16, page.length);
        assertEquals(0x83, page[1] & 0xff);
        VpdPage83 parsed = VpdPage83.parse(page);
        assertEquals(1, parsed.designators().size());
        VpdPage83.Designator d = parsed.designators().get(0);
        assertEquals(3, d.type());
        assertEquals(0, d.association());
        assertEquals(1, d.codeSet());
        assertEquals(16, d.value().length);
        assertEquals(Optional.of(Wwid.naa(NAA)), parsed.preferredWwid());
        assertEquals("3" + NAA, parsed.preferredWwid().orElseThrow().multipathForm());
        assertEquals(List.of(Wwid.naa(NAA)), parsed.lunWwids());
    }

    @Test
    void aLioStylePageYieldsTheLunNaaNotThePortDesignators() {
        // What targetcli's LIO answers: NAA for the LUN, T10 vendor id, then target-port designators.
        byte[] page = Vpd.page(
                Vpd.naa(NAA),
                Vpd.t10("LIO-ORG block1          2e3c1d6a-5b4c-34b5-8a1f-2e3d4"),
                Vpd.relativeTargetPort(1),
                Vpd.targetPortNaa("5001405aaaaaaaaa"),
                Vpd.scsiName(Vpd.TARGET_PORT, "iqn.2003-01.org.linux-iscsi.t1,t,0x0001"));
        VpdPage83 parsed = VpdPage83.parse(page);
        assertEquals(5, parsed.designators().size());
        assertEquals(Wwid.naa(NAA), parsed.preferredWwid().orElseThrow());
        List<Wwid> lun = parsed.lunWwids();
        assertEquals(2, lun.size());
        assertEquals(Wwid.naa(NAA), lun.get(0));
        assertEquals(Wwid.Type.T10, lun.get(1).type());
        assertFalse(lun.contains(Wwid.naa("5001405aaaaaaaaa")), "a target port's NAA does not name the LUN");
    }

    @Test
    void preferenceFollowsMultipathOrder() {
        byte[] t10 = Vpd.t10("VENDOR  PRODUCT 123");
        byte[] eui = Vpd.eui64("0025385b71b01234");
        byte[] naaRegistered = Vpd.naa("5000c500a1b2c3d4");
        byte[] naaLocal = Vpd.naa("3000000000000001");
        byte[] name = Vpd.scsiName(Vpd.LUN, "iqn.2003-01.example:lun7");
        assertEquals(Wwid.naa("5000c500a1b2c3d4"),
                VpdPage83.parse(Vpd.page(t10, eui, name, naaRegistered)).preferredWwid().orElseThrow());
        assertEquals(Wwid.naa(NAA),
                VpdPage83.parse(Vpd.page(naaRegistered, Vpd.naa(NAA))).preferredWwid().orElseThrow());
        assertEquals(Wwid.eui64("0025385b71b01234"),
                VpdPage83.parse(Vpd.page(t10, name, eui, naaLocal)).preferredWwid().orElseThrow());
        assertEquals(Wwid.name("iqn.2003-01.example:lun7"),
                VpdPage83.parse(Vpd.page(t10, name, naaLocal)).preferredWwid().orElseThrow());
        assertEquals(Wwid.Type.T10, VpdPage83.parse(Vpd.page(naaLocal, t10)).preferredWwid().orElseThrow().type());
        assertEquals(Wwid.naa("3000000000000001"),
                VpdPage83.parse(Vpd.page(naaLocal)).preferredWwid().orElseThrow());
    }

    @Test
    void aPageWithOnlyPortDesignatorsHasNoLunWwid() {
        VpdPage83 parsed = VpdPage83.parse(Vpd.page(Vpd.targetPortNaa(NAA), Vpd.relativeTargetPort(2)));
        assertEquals(Optional.empty(), parsed.preferredWwid());
        assertEquals(List.of(), parsed.lunWwids());
    }

    @Test
    void aTruncatedPageKeepsTheWholeDesignatorsBeforeTheCut() {
        byte[] full = Vpd.page(Vpd.naa(NAA), Vpd.t10("VENDOR  PRODUCT 123"));
        byte[] cut = Arrays.copyOf(full, full.length - 5);
        VpdPage83 parsed = VpdPage83.parse(cut);
        assertEquals(1, parsed.designators().size());
        assertEquals(Wwid.naa(NAA), parsed.preferredWwid().orElseThrow());
    }

    @Test
    void somethingThatIsNotPage83IsRefused() {
        assertThrows(IllegalArgumentException.class, () -> VpdPage83.parse(new byte[]{0, (byte) 0x80, 0, 0}));
        assertThrows(IllegalArgumentException.class, () -> VpdPage83.parse(new byte[]{0, (byte) 0x83}));
        assertThrows(IllegalArgumentException.class, () -> VpdPage83.parse(new byte[0]));
    }

    @Test
    void t10DesignatorFromThePageMatchesTheKernelAndMultipathSpellings() {
        Wwid fromPage = VpdPage83.parse(Vpd.page(Vpd.t10("ATA     QEMU HARDDISK   QM00001 ")))
                .preferredWwid().orElseThrow();
        assertEquals("1ATA_QEMU_HARDDISK_QM00001", fromPage.multipathForm());
        assertTrue(fromPage.matches(Wwid.parse("t10.ATA     QEMU HARDDISK   QM00001")));
    }
}
