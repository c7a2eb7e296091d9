package dev.blocknode.transport.fc;

import dev.blocknode.os.HostPaths;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.Sysfs;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The node's Fibre Channel view from sysfs: its HBA ports (/sys/class/fc_host/hostH) and the remote ports
 * each one sees (/sys/class/fc_remote_ports/rport-H:C-N). A remote port that is a SCSI target has a
 * {@code scsi_target_id} (T of H:C:T:L; -1 for a port that is not a target, such as another initiator).
 * Nothing here needs the port's SCSI target in sysfs: with the kernel's own scan off (scsi_mod.scan=manual) a
 * remote port has no targetH:C:T directory and no fc_transport entry until a LUN behind it is scanned, and the
 * kernel removes the target with its last LUN (both measured in the VM tier).
 */
public final class FcPorts {

    private static final Logger LOG = Logger.getLogger(FcPorts.class.getName());
    private static final Pattern HOST = Pattern.compile("host(\\d+)");
    private static final Pattern RPORT = Pattern.compile("rport-(\\d+):(\\d+)-(\\d+)");
    static final String ONLINE = "Online";
    static final String FCP_TARGET = "FCP Target";

    /**
     * An HBA port of this node; its node name (WWNN) is empty where sysfs has none, its speed ("16 Gbit",
     * "unknown" while the link is down) where the driver gives none.
     */
    public record FcHost(int host, String portName, String nodeName, String state, String speed) {

        public boolean online() {
            return ONLINE.equals(state);
        }
    }

    /**
     * A port seen from one HBA: host and channel come from its name; the target id from scsi_target_id; the
     * roles as the kernel lists them ("FCP Target", "FCP Initiator", both for an FCoE or LIO array port;
     * "unknown" once the port is gone for longer than its dev_loss_tmo).
     */
    public record RemotePort(String name, int host, int channel, String portName, String state, int scsiTargetId,
                             List<String> roles) {

        public RemotePort {
            roles = List.copyOf(roles);
        }

        public boolean online() {
            return ONLINE.equals(state);
        }

        public boolean isScsiTarget() {
            return scsiTargetId >= 0;
        }

        public boolean isFcpTarget() {
            return roles.contains(FCP_TARGET);
        }

        public ScsiAddress lunAddress(long lun) {
            return new ScsiAddress(host, channel, scsiTargetId, lun);
        }
    }

    private final HostPaths paths;

    public FcPorts(HostPaths paths) {
        this.paths = paths;
    }

    public List<FcHost> hosts() throws IOException {
        List<FcHost> hosts = new ArrayList<>();
        Path dir = paths.sys().resolve("class/fc_host");
        for (String entry : Sysfs.list(dir)) {
            Matcher m = HOST.matcher(entry);
            if (!m.matches()) {
                continue;
            }
            Optional<String> portName = Sysfs.read(dir.resolve(entry).resolve("port_name"));
            Optional<String> state = Sysfs.read(dir.resolve(entry).resolve("port_state"));
            Optional<String> nodeName = Sysfs.read(dir.resolve(entry).resolve("node_name"));
            Optional<String> speed = Sysfs.read(dir.resolve(entry).resolve("speed"));
            if (portName.isPresent() && state.isPresent()) {
                hosts.add(new FcHost(Integer.parseInt(m.group(1)), normalizedOrRaw(portName.get()),
                        nodeName.map(FcPorts::normalizedOrRaw).orElse(""), state.get(), speed.orElse("")));
            }
        }
        return hosts;
    }

    public List<RemotePort> remotePorts() throws IOException {
        List<RemotePort> ports = new ArrayList<>();
        Path dir = paths.sys().resolve("class/fc_remote_ports");
        for (String entry : Sysfs.list(dir)) {
            Matcher m = RPORT.matcher(entry);
            if (!m.matches()) {
                continue;
            }
            Path port = dir.resolve(entry);
            Optional<String> portName = Sysfs.read(port.resolve("port_name"));
            Optional<String> state = Sysfs.read(port.resolve("port_state"));
            Optional<String> targetId = Sysfs.read(port.resolve("scsi_target_id"));
            Optional<String> roles = Sysfs.read(port.resolve("roles"));
            if (portName.isEmpty() || state.isEmpty() || targetId.isEmpty() || roles.isEmpty()) {
                continue; // went away while we looked
            }
            int target;
            try {
                target = Integer.parseInt(targetId.get());
            } catch (NumberFormatException e) {
                LOG.warning(() -> entry + " has an unreadable scsi_target_id \"" + targetId.get() + "\"");
                continue;
            }
            ports.add(new RemotePort(entry, Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                    normalizedOrRaw(portName.get()), state.get(), target, roleList(roles.get())));
        }
        return ports;
    }

    /**
     * The LUN's address behind every remote port of WWPN {@code wwpn} that is a SCSI target, whatever its state now
     * (it may be down since a scan): where a disk of that LUN through that port can be. A port that is no SCSI target
     * has no disk behind it.
     */
    public List<ScsiAddress> lunAddresses(String wwpn, long lun) throws IOException {
        List<ScsiAddress> addresses = new ArrayList<>();
        for (RemotePort port : remotePorts()) {
            if (port.portName().equals(wwpn) && port.isScsiTarget() && !addresses.contains(port.lunAddress(lun))) {
                addresses.add(port.lunAddress(lun));
            }
        }
        return addresses;
    }

    /** "FCP Target, FCP Initiator" as its roles, each stripped. */
    private static List<String> roleList(String roles) {
        return Arrays.stream(roles.split(",")).map(String::strip).filter(r -> !r.isEmpty()).toList();
    }

    private static String normalizedOrRaw(String portName) {
        try {
            return Wwpn.normalize(portName);
        } catch (IllegalArgumentException unreadable) {
            return portName;
        }
    }
}
