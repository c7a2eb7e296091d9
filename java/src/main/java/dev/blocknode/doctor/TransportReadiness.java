package dev.blocknode.doctor;

import java.util.List;
import java.util.Optional;

/**
 * What the doctor found for one transport (or for the kernel): its findings, or, when none of the transport's
 * pieces is on the node, only why it counts as not set up, since a node need not use every transport.
 */
public record TransportReadiness(String transport, Optional<String> notSetUp, List<Finding> findings) {

    /** The names, as the JSON form and the metric's {@code transport} label give them. */
    public static final String ISCSI = "iscsi";
    public static final String MULTIPATH = "multipath";
    public static final String FC = "fc";
    public static final String NVME_TCP = "nvme-tcp";
    public static final String KERNEL = "kernel";

    public TransportReadiness {
        findings = List.copyOf(findings);
    }

    public static TransportReadiness notSetUp(String transport, String why) {
        return new TransportReadiness(transport, Optional.of(why), List.of());
    }

    public static TransportReadiness of(String transport, List<Finding> findings) {
        return new TransportReadiness(transport, Optional.empty(), findings);
    }

    public Severity worst() {
        return findings.stream().map(Finding::severity).max(Enum::compareTo).orElse(Severity.OK);
    }
}
