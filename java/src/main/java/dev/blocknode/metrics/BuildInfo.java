package dev.blocknode.metrics;

import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.util.List;
import java.util.Set;

/**
 * {@code blocknode_build_info{version, node} 1}: which build each node runs, so that a dashboard shows a
 * rollout's progress, and the node's name, so that a query can put a node's name on any series of the same
 * target ({@code * on (instance) group_left (node) blocknode_build_info}) whatever the scrape's labels are.
 */
public final class BuildInfo {

    public static final String NAME = "blocknode_build_info";

    private BuildInfo() {
    }

    /**
     * @param version what GetPluginInfo answers as vendor_version
     * @param node    what NodeGetInfo answers as node_id
     */
    public static void register(PrometheusRegistry registry, String version, String node) {
        InfoSeries.register(registry, NAME, "always 1; version is the plugin's build (GetPluginInfo's"
                + " vendor_version), node the node's name (NodeGetInfo's node_id)", "version", "node")
                .replace(Set.of(List.of(version, node)));
    }
}
