package dev.blocknode.doctor;

import dev.blocknode.testing.FakeSysfs;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    /** Each sample's labels in the scrape, ordered by their text; every value 1. */
    private List<Map<String, String>> rows(String name) {
        List<Map<String, String>> rows = new ArrayList<>();
        Pattern label = Pattern.compile("([a-z_]+)=\"([^\"]*)\"");
        for (String line : registry.scrape().lines().toList()) {
            if (line.startsWith(name + "{")) {
                assertTrue(line.endsWith("} 1"), line);
                Map<String, String> labels = new TreeMap<>();
                Matcher m = label.matcher(line.substring(line.indexOf('{'), line.lastIndexOf('}')));
                while (m.find()) {
                    labels.put(m.group(1), m.group(2));
                }
                rows.add(labels);
            }
        }
        rows.sort(Comparator.comparing(Map::toString));
        return rows;
    }
}
