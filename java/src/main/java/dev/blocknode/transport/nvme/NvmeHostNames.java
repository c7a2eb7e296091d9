package dev.blocknode.transport.nvme;

import dev.blocknode.os.HostPaths;

import java.io.IOException;
import java.util.Optional;

/**
 * The node's own NVMe host NQN and host ID, from the same files its connections use (/etc/nvme/hostnqn and
 * hostid): what a storage admin puts in a subsystem's host list. Per-volume overrides are not the node's and
 * are not here.
 */
public record NvmeHostNames(String hostNqn, Optional<String> hostId) {

    /** Empty when the node has no host NQN (nvme-cli not set up). */
    public static Optional<NvmeHostNames> configured(HostPaths paths) throws IOException {
        HostIdentity.Configured node = HostIdentity.configured(paths.nvmeHostDirectory());
        return node.hostNqn().map(nqn -> new NvmeHostNames(nqn, node.hostId()));
    }
}
