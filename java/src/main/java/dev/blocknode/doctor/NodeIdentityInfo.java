package dev.blocknode.doctor;

import dev.blocknode.metrics.InfoSeries;
import dev.blocknode.os.HostPaths;
import dev.blocknode.transport.fc.FcPorts;
import dev.blocknode.transport.iscsi.InitiatorName;
import dev.blocknode.transport.nvme.NvmeHostNames;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Logger;

/**
 * Who this node is to the storage, as info series (value 1, the names in labels), so that a storage admin lists
 * every node's initiator names for the LUNs' access lists with one PromQL query instead of ssh to each node:
 * {@code blocknode_node_iscsi_initiator_info{node, iqn}}, {@code blocknode_node_fc_port_info{node, host, wwpn,
 * wwnn, port_state}} (one per HBA port) and {@code blocknode_node_nvme_host_info{node, hostnqn, hostid}}. A row
 * is absent where the node has no such identity. Read again right before each scrape on the metrics thread
 * (a few small files and sysfs attributes), so a renamed initiator shows without a restart and no CSI call
 * ever waits for it.
 */
public final class NodeIdentityInfo {

    static final String ISCSI = "blocknode_node_iscsi_initiator_info";
    static final String FC = "blocknode_node_fc_port_info";
    static final String NVME = "blocknode_node_nvme_host_info";
    private static final Logger LOG = Logger.getLogger(NodeIdentityInfo.class.getName());

    private final HostPaths paths;
    private final FcPorts fcPorts;
    private final String node;
    private final InfoSeries iscsi;
    private final InfoSeries fc;
    private final InfoSeries nvme;
    /** The last failure logged, so that a file unreadable for days is logged once, not at every scrape. */
    private String lastFailure = "";

    public NodeIdentityInfo(HostPaths paths, String nodeId, PrometheusRegistry registry) {
        this.paths = paths;
        this.fcPorts = new FcPorts(paths);
        this.node = nodeId;
        this.iscsi = InfoSeries.register(registry, ISCSI, "1 per node with an iSCSI initiator name"
                + " (/etc/iscsi/initiatorname.iscsi): the IQN to allow in the targets' access lists", "node", "iqn");
        this.fc = InfoSeries.register(registry, FC, "1 per Fibre Channel HBA port of the node (/sys/class/fc_host):"
                + " its WWPN and WWNN for zoning and LUN masking, and the port's state",
                "node", "host", "wwpn", "wwnn", "port_state");
        this.nvme = InfoSeries.register(registry, NVME, "1 per node with an NVMe host NQN (/etc/nvme/hostnqn,"
                + " hostid): the host to allow in the subsystems' host lists", "node", "hostnqn", "hostid");
    }

    /** Reads the identities again; one that cannot be read keeps its previous rows and is logged once. */
    public void refresh() {
        List<String> failures = new ArrayList<>();
        try {
            iscsi.replace(rows(InitiatorName.read(paths).map(iqn -> List.of(node, iqn))));
        } catch (IOException | RuntimeException e) {
            failures.add("the iSCSI initiator name: " + e.getMessage());
        }
        try {
            Set<List<String>> ports = new HashSet<>();
            for (FcPorts.FcHost port : fcPorts.hosts()) {
                ports.add(List.of(node, "host" + port.host(), port.portName(), port.nodeName(), port.state()));
            }
            fc.replace(ports);
        } catch (IOException | RuntimeException e) {
            failures.add("the Fibre Channel ports: " + e.getMessage());
        }
        try {
            nvme.replace(rows(NvmeHostNames.configured(paths).map(host -> List.of(node, host.hostNqn(),
                    host.hostId().orElse("")))));
        } catch (IOException | RuntimeException e) {
            failures.add("the NVMe host NQN: " + e.getMessage());
        }
        String failure = String.join("; ", failures);
        if (!failure.isEmpty() && !failure.equals(lastFailure)) {
            LOG.warning(() -> "node identity metrics: cannot read " + failure + " (keeping what was read before)");
        }
        lastFailure = failure;
    }

    private static Set<List<String>> rows(Optional<List<String>> row) {
        return row.map(Set::of).orElse(Set.of());
    }
}
