package dev.blocknode.doctor;

import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.InfoSeries;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The node's SAN identities as info series, read from a fabricated /etc and /sys (the HostPaths seam): each
 * present where its files are, absent where they are not, and read again at each refresh.
 */
class NodeIdentityInfoUnitTest {

    private static final String IQN = "iqn.1993-08.org.debian:01:5a1b2c3d4e5f";
    private static final String NQN = "nqn.2014-08.org.nvmexpress:uuid:0c0a8a2e-2f7d-4c5e-9a51-0e4b3c6f7a81";
    private static final String HOST_ID = "0c0a8a2e-2f7d-4c5e-9a51-0e4b3c6f7a81";

    @TempDir
    Path temp;

    private FakeSysfs host;
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private NodeIdentityInfo gauges;

    @BeforeEach
    void fabricate() throws IOException {
        host = new FakeSysfs(temp);
        gauges = new NodeIdentityInfo(host.paths(), "node-7", registry.getPrometheusRegistry());
    }

    @Test
    void aNodeWithoutSanSoftwareHasNoRows() {
        gauges.refresh();

        assertEquals(List.of(), rows(NodeIdentityInfo.ISCSI));
        assertEquals(List.of(), rows(NodeIdentityInfo.FC));
        assertEquals(List.of(), rows(NodeIdentityInfo.NVME));
    }

    @Test
    void theInitiatorNameIsTheLineOpenIscsiReadsAndFollowsAChange() throws IOException {
        host.etcFile("iscsi/initiatorname.iscsi", "## DO NOT EDIT OR REMOVE THIS FILE!\n"
                + "## If you remove this file, the iSCSI daemon will not start.\n"
                + "InitiatorName=" + IQN + "\n");
        gauges.refresh();
        assertEquals(List.of(Map.of("node", "node-7", "iqn", IQN)), rows(NodeIdentityInfo.ISCSI));

        host.etcFile("iscsi/initiatorname.iscsi", "InitiatorName=iqn.2026-11.dev.blocknode:renamed\n");
        gauges.refresh();
        assertEquals(List.of(Map.of("node", "node-7", "iqn", "iqn.2026-11.dev.blocknode:renamed")),
                rows(NodeIdentityInfo.ISCSI), "a renamed initiator replaces the row, no stale one stays");
    }

    @Test
    void everyFibreChannelPortIsARowWithItsNamesAndState() throws IOException {
        host.fcHost(5, "0x21000024ff7a3b01", "Online").fcHost(6, "0x21000024ff7a3b02", "Linkdown");
        gauges.refresh();

        assertEquals(List.of(
                Map.of("node", "node-7", "host", "host5", "wwpn", "21000024ff7a3b01", "wwnn", "20000000c9000005",
                        "port_state", "Online"),
                Map.of("node", "node-7", "host", "host6", "wwpn", "21000024ff7a3b02", "wwnn", "20000000c9000006",
                        "port_state", "Linkdown")), rows(NodeIdentityInfo.FC));
    }

    @Test
    void theNvmeHostIsItsNqnAndIdAndAnIdIsOptional() throws IOException {
        host.etcFile("nvme/hostnqn", NQN + "\n");
        gauges.refresh();
        assertEquals(List.of(Map.of("node", "node-7", "hostnqn", NQN, "hostid", "")), rows(NodeIdentityInfo.NVME));

        host.etcFile("nvme/hostid", HOST_ID + "\n");
        gauges.refresh();
        assertEquals(List.of(Map.of("node", "node-7", "hostnqn", NQN, "hostid", HOST_ID)),
                rows(NodeIdentityInfo.NVME));
    }

    @Test
    void anUnreadableFileKeepsWhatWasReadAndTheOthersStillRefresh() throws IOException {
        Path name = host.etcFile("iscsi/initiatorname.iscsi", "InitiatorName=" + IQN + "\n");
        gauges.refresh();
        Files.delete(name);
        Files.createSymbolicLink(name, Path.of("/dev/zero")); // never followed: refused, not read for ever
        host.etcFile("nvme/hostnqn", NQN + "\n");
        gauges.refresh();

        assertEquals(List.of(Map.of("node", "node-7", "iqn", IQN)), rows(NodeIdentityInfo.ISCSI));
        assertEquals(1, rows(NodeIdentityInfo.NVME).size());
    }

    private List<Map<String, String>> rows(String name) {
        return InfoSeries.rows(registry.scrape(), name);
    }
}
