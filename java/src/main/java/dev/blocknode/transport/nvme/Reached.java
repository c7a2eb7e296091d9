package dev.blocknode.transport.nvme;

import dev.blocknode.transport.ContextList;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The subsystem a volume reaches, through which portals, as which host: what its attachment records, and
 * what decides which controllers are its.
 */
record Reached(String subsystemNqn, List<NvmePortal> portals, String hostNqn) {

    Reached {
        portals = List.copyOf(portals);
    }

    static Optional<Reached> of(Map<String, String> details) {
        String nqn = details.get(NvmeTcpTransport.DETAIL_NQN);
        String portals = details.get(NvmeTcpTransport.DETAIL_PORTALS);
        String host = details.get(NvmeTcpTransport.DETAIL_HOST_NQN);
        if (nqn == null || portals == null || host == null) {
            return Optional.empty();
        }
        List<NvmePortal> parsed = new ArrayList<>();
        for (String portal : ContextList.items(portals)) {
            try {
                parsed.add(NvmePortal.parse(portal));
            } catch (IllegalArgumentException unreadable) {
                return Optional.empty();
            }
        }
        return Optional.of(new Reached(nqn, parsed, host));
    }

    List<ControllerKey> keys() {
        return portals.stream().map(p -> new ControllerKey(subsystemNqn, p, hostNqn)).toList();
    }

    Map<String, String> details() {
        return Map.of(NvmeTcpTransport.DETAIL_NQN, subsystemNqn,
                NvmeTcpTransport.DETAIL_PORTALS, String.join(",", portals.stream().map(NvmePortal::toString).toList()),
                NvmeTcpTransport.DETAIL_HOST_NQN, hostNqn);
    }
}
