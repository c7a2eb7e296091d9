package dev.blocknode.doctor;

import dev.blocknode.os.HostPaths;
import dev.blocknode.transport.fc.FcPorts;
import dev.blocknode.transport.fc.FcPorts.FcHost;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Fibre Channel: every HBA port (/sys/class/fc_host/hostH), its WWPN, state and speed, read by the same reader as
 * the node identity metrics. A port down is a path down; no port online means no FC volume can attach. Not set up
 * when the node has no FC HBA.
 */
final class FcReadiness {

    private final FcPorts ports;

    FcReadiness(HostPaths paths) {
        this.ports = new FcPorts(paths);
    }

    TransportReadiness check() throws IOException {
        List<FcHost> hosts = ports.hosts();
        if (hosts.isEmpty()) {
            return TransportReadiness.notSetUp(TransportReadiness.FC, "no Fibre Channel HBA (/sys/class/fc_host)");
        }
        List<Finding> findings = new ArrayList<>();
        for (FcHost host : hosts) {
            String port = "host" + host.host() + " (WWPN " + host.portName() + ")";
            if (host.online()) {
                findings.add(Finding.ok("port", port + " is Online" + (host.speed().isEmpty() ? ""
                        : " at " + host.speed())));
            } else {
                findings.add(Finding.warning("port", port + " is " + host.state() + ": no path through it",
                        "check its cable, its SFP and its switch port (zoning does not take a port down)"));
            }
        }
        if (hosts.stream().noneMatch(FcHost::online)) {
            findings.add(Finding.error("online", "no Fibre Channel port is Online: FC volumes cannot attach",
                    "bring a port's link up (cable, SFP, switch port), then check its zoning"));
        }
        return TransportReadiness.of(TransportReadiness.FC, findings);
    }
}
