package dev.blocknode.doctor;

import dev.blocknode.os.AbstractSockets;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static dev.blocknode.doctor.DoctorFixture.assertFinding;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Fibre Channel and NVMe/TCP checks over a fabricated /sys, /dev, /etc and /lib/modules. */
class DoctorFcNvmeUnitTest {

    private static final String NQN = "nqn.2014-08.org.nvmexpress:uuid:0c0a8a2e-2f7d-4c5e-9a51-0e4b3c6f7a81";
    private static final String HOST_ID = "0c0a8a2e-2f7d-4c5e-9a51-0e4b3c6f7a81";

    @TempDir
    Path temp;

    private DoctorFixture node;

    @BeforeEach
    void host() throws Exception {
        node = new DoctorFixture(temp);
    }

    // ---- Fibre Channel -------------------------------------------------------------------------------

    @Test
    void noHbaIsNotSetUp() {
        assertTrue(node.examine(TransportReadiness.FC).notSetUp().isPresent());
    }

    @Test
    void eachPortIsReportedWithItsStateAndSpeed() throws Exception {
        node.host.fcHost(5, "0x21000024ff7a3b01", "Online").fcHost(6, "0x21000024ff7a3b02", "Linkdown");
        node.sys("class/fc_host/host5/speed", "16 Gbit\n");
        TransportReadiness fc = node.examine(TransportReadiness.FC);
        assertEquals(List.of("port", "port", "multipath"), fc.findings().stream().map(Finding::check).toList());
        Finding online = fc.findings().get(0);
        assertEquals(Severity.OK, online.severity());
        assertTrue(online.message().contains("host5 (WWPN 21000024ff7a3b01) is Online at 16 Gbit"), online::message);
        Finding down = fc.findings().get(1);
        assertEquals(Severity.WARNING, down.severity());
        assertTrue(down.message().contains("host6") && down.message().contains("Linkdown"), down::message);
        assertEquals(Severity.WARNING, fc.worst());
    }

    @Test
    void noPortOnlineIsAnError() throws Exception {
        node.host.fcHost(5, "0x21000024ff7a3b01", "Linkdown");
        assertFinding(node.examine(TransportReadiness.FC), "online", Severity.ERROR, "cannot attach");
    }

    /**
     * An FC node without dm-multipath read as ready although a LUN zoned to two ports is then two disks that no map
     * joins and nothing fails over between: a warning with its fix, in the FC section as in the iSCSI one.
     */
    @Test
    void anFcNodeWithoutMultipathIsAWarningWithItsFix() throws Exception {
        node.host.fcHost(5, "0x21000024ff7a3b01", "Online");
        DoctorReport report = node.examine();
        TransportReadiness fc = report.transports().get(2);
        assertEquals(TransportReadiness.FC, fc.transport());
        Finding multipath = assertFinding(fc, "multipath", Severity.WARNING, "Fibre Channel is set up but"
                + " dm-multipath is not", "no multipathd listening", "one port", "no multipathd checks");
        assertTrue(multipath.fix().contains("install multipath-tools")
                && multipath.fix().contains("systemctl enable --now multipathd"), multipath::fix);
        assertEquals(Severity.WARNING, fc.worst());
    }

    @Test
    void anFcNodeWithMultipathSaysSo() throws Exception {
        node.host.fcHost(5, "0x21000024ff7a3b01", "Online");
        node.unixSockets(AbstractSockets.MULTIPATHD);
        node.commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"no\"\n}\n");
        assertFinding(node.examine(TransportReadiness.FC), "multipath", Severity.OK, "one map");
    }

    @Test
    void aNodeWithoutFcIsNotToldAboutMultipath() throws Exception {
        TransportReadiness fc = node.examine(TransportReadiness.FC);
        assertTrue(fc.notSetUp().isPresent() && fc.findings().isEmpty(), fc::toString);
    }

    // ---- NVMe/TCP ------------------------------------------------------------------------------------

    private void nvmeReady() throws Exception {
        node.etc("nvme/hostnqn", NQN + "\n").etc("nvme/hostid", HOST_ID + "\n");
        Files.createDirectories(node.paths().sys().resolve("module/nvme_fabrics"));
        Files.createDirectories(node.paths().sys().resolve("module/nvme_tcp"));
        node.sys("module/nvme_core/parameters/multipath", "Y\n");
        node.file(node.paths().dev().resolve("nvme-fabrics"), "");
    }

    @Test
    void noIdentityAndNoModuleIsNotSetUp() {
        assertTrue(node.examine(TransportReadiness.NVME_TCP).notSetUp().isPresent());
    }

    @Test
    void aReadyNodeIsOk() throws Exception {
        nvmeReady();
        TransportReadiness nvme = node.examine(TransportReadiness.NVME_TCP);
        assertFinding(nvme, "nvme-fabrics", Severity.OK);
        assertFinding(nvme, "nvme-tcp-module", Severity.OK, "loaded");
        assertFinding(nvme, "native-multipath", Severity.OK, "=Y");
        assertFinding(nvme, "hostnqn", Severity.OK, NQN);
        assertFinding(nvme, "hostid", Severity.OK, HOST_ID);
        assertEquals(Severity.OK, nvme.worst());
    }

    @Test
    void fabricsNotLoadedIsAnErrorAndAnUnloadedTcpModuleTheKernelHasAWarning() throws Exception {
        node.etc("nvme/hostnqn", NQN + "\n").etc("nvme/hostid", HOST_ID + "\n");
        node.file(node.paths().kernelRelease(), "6.1.0-56-amd64\n");
        node.file(node.paths().kernelModules().resolve("6.1.0-56-amd64/modules.dep"),
                "kernel/drivers/nvme/host/nvme-tcp.ko: kernel/drivers/nvme/host/nvme-fabrics.ko\n");
        TransportReadiness nvme = node.examine(TransportReadiness.NVME_TCP);
        Finding fabrics = assertFinding(nvme, "nvme-fabrics", Severity.ERROR, "nvme_fabrics is not loaded");
        assertTrue(fabrics.fix().contains("modprobe nvme-tcp"));
        assertFinding(nvme, "nvme-tcp-module", Severity.WARNING, "not loaded", "modules.dep");
        assertFinding(nvme, "native-multipath", Severity.OK, "not loaded yet");
    }

    @Test
    void aKernelWithoutTheTcpModuleIsAnError() throws Exception {
        nvmeReady();
        Files.delete(node.paths().sys().resolve("module/nvme_tcp"));
        node.file(node.paths().kernelRelease(), "6.1.0-56-amd64\n");
        node.file(node.paths().kernelModules().resolve("6.1.0-56-amd64/modules.builtin"), "kernel/fs/ext4/ext4.ko\n");
        assertFinding(node.examine(TransportReadiness.NVME_TCP), "nvme-tcp-module", Severity.ERROR, "6.1.0-56-amd64");
    }

    @Test
    void nativeMultipathOffIsAWarning() throws Exception {
        nvmeReady();
        node.sys("module/nvme_core/parameters/multipath", "N\n");
        assertFinding(node.examine(TransportReadiness.NVME_TCP), "native-multipath", Severity.WARNING, "several portals");
    }

    @Test
    void aMalformedHostNqnIsAnError() throws Exception {
        nvmeReady();
        node.etc("nvme/hostnqn", "node-7\n");
        assertFinding(node.examine(TransportReadiness.NVME_TCP), "hostnqn", Severity.ERROR, "is not an NQN");
    }

    @Test
    void noHostNqnIsAnErrorThatSaysWhatTheHostIdCannot() throws Exception {
        nvmeReady();
        Files.delete(node.paths().nvmeHostDirectory().resolve("hostnqn"));
        TransportReadiness nvme = node.examine(TransportReadiness.NVME_TCP);
        assertFinding(nvme, "hostnqn", Severity.ERROR, "no host NQN");
        assertEquals(Severity.ERROR, nvme.worst());
    }

    @Test
    void noHostIdIsAWarningAndAMalformedOneAnError() throws Exception {
        nvmeReady();
        Files.delete(node.paths().nvmeHostDirectory().resolve("hostid"));
        assertFinding(node.examine(TransportReadiness.NVME_TCP), "hostid", Severity.WARNING, "no host ID");
        node.etc("nvme/hostid", "not-a-uuid\n");
        assertFinding(node.examine(TransportReadiness.NVME_TCP), "hostid", Severity.ERROR, "not a UUID");
    }

    /**
     * A host NQN or host ID made of a UUID many machines share (an unset SMBIOS UUID, from which nvme-cli derives
     * the NQN; all zeros; RFC 4122's example) is a warning that says the duplicate itself shows only cluster-wide.
     */
    @Test
    void aHostNqnOrIdOfAPlaceholderUuidIsAWarning() throws Exception {
        nvmeReady();
        node.etc("nvme/hostnqn", "nqn.2014-08.org.nvmexpress:uuid:03000200-0400-0500-0006-000700080009\n");
        TransportReadiness nvme = node.examine(TransportReadiness.NVME_TCP);
        Finding shared = assertFinding(nvme, "hostnqn", Severity.WARNING, "03000200-0400-0500-0006-000700080009",
                "many machines", "visible only across the cluster", "BlocknodeDuplicate");
        assertTrue(shared.fix().contains("/proc/sys/kernel/random/uuid") && shared.fix().contains("drain"),
                shared.fix());
        assertFinding(nvme, "hostid", Severity.OK, HOST_ID);

        node.etc("nvme/hostnqn", NQN + "\n").etc("nvme/hostid", "00000000-0000-0000-0000-000000000000\n");
        nvme = node.examine(TransportReadiness.NVME_TCP);
        assertFinding(nvme, "hostnqn", Severity.OK, NQN);
        assertFinding(nvme, "hostid", Severity.WARNING, "many machines", "visible only across the cluster");

        node.etc("nvme/hostnqn", "nqn.2014-08.org.nvmexpress:uuid:F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6\n");
        assertFinding(node.examine(TransportReadiness.NVME_TCP), "hostnqn", Severity.WARNING, "F81D4FAE");
    }
}
