package dev.blocknode.doctor;

import dev.blocknode.os.AbstractSockets;
import dev.blocknode.os.exec.CommandException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.Map;

import static dev.blocknode.doctor.DoctorFixture.assertFinding;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The iSCSI checks over a fabricated host: the initiator name, iscsid's socket, iscsiadm against iscsid. */
class DoctorIscsiUnitTest {

    private static final String IQN = "iqn.1993-08.org.debian:01:5a1b2c3d4e5f";

    @TempDir
    Path temp;

    private DoctorFixture node;

    @BeforeEach
    void host() throws Exception {
        node = new DoctorFixture(temp);
    }

    @Test
    void aNodeWithoutNameOrDaemonIsNotSetUpAndRunsNothing() {
        TransportReadiness iscsi = node.examine(TransportReadiness.ISCSI);
        assertTrue(iscsi.notSetUp().isPresent());
        assertTrue(iscsi.findings().isEmpty());
        assertEquals(Severity.OK, iscsi.worst());
        assertTrue(node.commands.calls().isEmpty(), "no tool runs for a transport that is not set up");
    }

    @Test
    void everythingInPlaceAndOfOneReleaseIsOk() throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "## generated\nInitiatorName=" + IQN + "\n")
                .unixSockets(AbstractSockets.ISCSID, AbstractSockets.MULTIPATHD).process(812, "iscsid");
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        node.commands.expect("nsenter", "--target", "812", "--mount", "--", "iscsid", "--version")
                .succeeds("iscsid version 2.1.8\n");
        node.commands.expect("multipathd", "show", "config").succeeds("defaults {\n}\n");
        TransportReadiness iscsi = node.examine(TransportReadiness.ISCSI);
        assertFinding(iscsi, "initiator-name", Severity.OK, IQN);
        assertFinding(iscsi, "iscsid", Severity.OK);
        assertFinding(iscsi, "iscsiadm-version", Severity.OK,
                "the image's iscsiadm and the host's iscsid are both 2.1.8");
        assertFinding(iscsi, "multipath", Severity.OK, "dm-multipath is set up");
        assertEquals(Severity.OK, iscsi.worst());
        assertTrue(node.commands.calls().stream().allMatch(c -> c.timeout().equals(IscsiReadiness.TOOL_TIMEOUT)));
    }

    @Test
    void versionsThatDifferAreAWarningNamingBoth() throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + IQN + "\n")
                .unixSockets(AbstractSockets.ISCSID).process(77, "iscsid");
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.9\n");
        node.commands.expect("nsenter", "--target", "77", "--mount", "--", "iscsid", "--version")
                .succeeds("iscsid version 2.0.874\n");
        assertFinding(node.examine(TransportReadiness.ISCSI), "iscsiadm-version", Severity.WARNING, "2.1.9",
                "2.0.874");
    }

    @Test
    void aHostVersionThatCannotBeReadIsNoFinding() throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + IQN + "\n").unixSockets(AbstractSockets.ISCSID)
                .process(12, "bash");
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        assertFinding(node.examine(TransportReadiness.ISCSI), "iscsiadm-version", Severity.OK, "2.1.8",
                "cannot be read");
    }

    @Test
    void anImageWithoutIscsiadmIsAnError() throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + IQN + "\n").unixSockets(AbstractSockets.ISCSID);
        node.commands.expect("iscsiadm", "--version")
                .throwing(c -> new CommandException(c, null, "cannot start iscsiadm", null));
        assertFinding(node.examine(TransportReadiness.ISCSI), "iscsiadm-version", Severity.ERROR);
    }

    @Test
    void aNameWithoutTheDaemonIsAnErrorWithItsFix() throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + IQN + "\n");
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        TransportReadiness iscsi = node.examine(TransportReadiness.ISCSI);
        Finding daemon = assertFinding(iscsi, "iscsid", Severity.ERROR, AbstractSockets.ISCSID);
        assertTrue(daemon.fix().contains("systemctl enable --now iscsid"), daemon::fix);
        assertEquals(Severity.ERROR, iscsi.worst());
    }

    @Test
    void aFileWithoutANameIsAnError() throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "# InitiatorName=" + IQN + "\n").unixSockets(AbstractSockets.ISCSID);
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        assertFinding(node.examine(TransportReadiness.ISCSI), "initiator-name", Severity.ERROR, "names no");
    }

    @ParameterizedTest
    @ValueSource(strings = {"iqn.93-08.org.debian:01:x", "IQN.1993-08.org.debian", "node1", "eui.02004567A425678",
            "iqn.1993-08.org debian"})
    void aMalformedNameIsAnError(String name) throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + name + "\n").unixSockets(AbstractSockets.ISCSID);
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        assertFinding(node.examine(TransportReadiness.ISCSI), "initiator-name", Severity.ERROR, "is not an IQN");
    }

    @Test
    void theNameFormats() {
        assertTrue(IscsiReadiness.wellFormed(IQN));
        assertTrue(IscsiReadiness.wellFormed("iqn.2026-11.dev.blocknode"));
        assertTrue(IscsiReadiness.wellFormed("eui.02004567A425678D"));
        assertTrue(IscsiReadiness.wellFormed("naa.52004567BA64678D"));
        assertFalse(IscsiReadiness.wellFormed("iqn.2026-11.dev.blocknode:has space"));
    }

    /**
     * An initiator name under a domain reserved for examples was copied from documentation: a warning that says the
     * duplicate itself shows only cluster-wide; a name of the same shape elsewhere is fine.
     */
    @ParameterizedTest
    @ValueSource(strings = {"iqn.2001-04.com.example:storage:node1", "iqn.2024-01.org.example",
            "iqn.2024-01.net.example.lab:n"})
    void anInitiatorNameFromTheExampleDomainsIsAWarning(String name) throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + name + "\n").unixSockets(AbstractSockets.ISCSID);
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        Finding copied = assertFinding(node.examine(TransportReadiness.ISCSI), "initiator-name", Severity.WARNING,
                name, "reserved for examples", "visible only across the cluster", "BlocknodeDuplicate");
        assertTrue(copied.fix().contains("iscsi-iname") && copied.fix().contains("drain"), copied.fix());
    }

    @Test
    void aNameThatOnlyMentionsExampleIsNoWarning() throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=iqn.2024-01.com.examples:node1\n")
                .unixSockets(AbstractSockets.ISCSID);
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        assertFinding(node.examine(TransportReadiness.ISCSI), "initiator-name", Severity.OK);
    }

    /**
     * An iSCSI node without dm-multipath read as ready; each volume then runs on one path that nothing
     * repairs (or on a map no multipathd checks): a warning with its fix.
     */
    @Test
    void anIscsiNodeWithoutMultipathIsAWarningWithItsFix() throws Exception {
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + IQN + "\n").unixSockets(AbstractSockets.ISCSID);
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        DoctorReport report = node.examine();
        TransportReadiness iscsi = report.transports().getFirst();
        Finding multipath = assertFinding(iscsi, "multipath", Severity.WARNING, "iSCSI is set up but dm-multipath is"
                + " not", "no multipathd listening", "one portal", "no multipathd checks");
        assertTrue(multipath.fix().contains("install multipath-tools")
                && multipath.fix().contains("systemctl enable --now multipathd"), multipath::fix);
        assertEquals(Severity.WARNING, iscsi.worst());
        assertTrue(report.transports().get(1).notSetUp().isPresent(), "multipath's own section: not set up");
    }

    @Test
    void aNodeWithoutIscsiIsNotToldAboutMultipath() throws Exception {
        node.unixSockets(AbstractSockets.MULTIPATHD);
        node.commands.expect("multipathd", "show", "config").succeeds("defaults {\n}\n");
        TransportReadiness iscsi = node.examine(TransportReadiness.ISCSI);
        assertTrue(iscsi.notSetUp().isPresent() && iscsi.findings().isEmpty(), iscsi::toString);
    }

    /**
     * Run on a node's host (java -jar blocknode.jar doctor), the doctor called the host's own iscsiadm
     * "the image's", blamed a missing hostPID and told to use the image; there it names this machine's tools.
     */
    @Test
    void onTheHostTheToolsAreThisMachines() throws Exception {
        node.tools = ToolOwner.MACHINE;
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + IQN + "\n").unixSockets(AbstractSockets.ISCSID);
        node.commands.expect("iscsiadm", "--version").succeeds("iscsiadm version 2.1.8\n");
        TransportReadiness iscsi = node.examine(TransportReadiness.ISCSI);
        assertFinding(iscsi, "iscsiadm-version", Severity.OK, "this machine's iscsiadm is 2.1.8",
                "no iscsid process in /proc: it is not running)");
        for (Finding finding : iscsi.findings()) {
            assertFalse((finding.message() + finding.fix()).matches("(?s).*(image|hostPID|pod).*"), finding::toString);
        }
    }

    @Test
    void onTheHostAMissingIscsiadmIsToBeInstalledThere() throws Exception {
        node.tools = ToolOwner.MACHINE;
        node.etc("iscsi/initiatorname.iscsi", "InitiatorName=" + IQN + "\n").unixSockets(AbstractSockets.ISCSID);
        node.commands.expect("iscsiadm", "--version")
                .throwing(c -> new CommandException(c, null, "cannot start iscsiadm", null));
        Finding missing = assertFinding(node.examine(TransportReadiness.ISCSI), "iscsiadm-version", Severity.ERROR,
                "on this machine");
        assertTrue(missing.fix().contains("apt-get install open-iscsi"), missing::fix);
    }

    @Test
    void theImageSaysItIsTheImage() {
        assertEquals(ToolOwner.IMAGE, ToolOwner.of(Map.of(ToolOwner.IMAGE_VARIABLE, "true")));
        assertEquals(ToolOwner.MACHINE, ToolOwner.of(Map.of()));
        assertEquals(ToolOwner.MACHINE, ToolOwner.of(Map.of(ToolOwner.IMAGE_VARIABLE, "")));
    }
}
