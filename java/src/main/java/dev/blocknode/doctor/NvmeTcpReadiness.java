package dev.blocknode.doctor;

import dev.blocknode.os.HostPaths;
import dev.blocknode.transport.nvme.NvmeHostNames;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * NVMe/TCP: the kernel's fabrics modules (the plugin connects through /dev/nvme-fabrics, which nvme_fabrics
 * makes; the kernel loads nvme_tcp itself at the first TCP connect, if the module is there), its native NVMe
 * multipath (the plugin builds no dm-multipath map over NVMe), and the host NQN and host ID a subsystem's host
 * list names, read by the same reader as the node identity metrics. Not set up when the node has neither the
 * identity files nor a fabrics module loaded.
 */
final class NvmeTcpReadiness {

    /** NVMe base specification: nqn.YYYY-MM.reversed.domain:anything, at most 223 bytes. */
    private static final Pattern NQN = Pattern.compile("nqn\\.\\d{4}-\\d{2}\\.[^:\\s]+:\\S+");
    private static final int NQN_MAX_BYTES = 223;
    private static final Pattern UUID = Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final String FIX_NQN = "on the host: nvme gen-hostnqn > /etc/nvme/hostnqn (and add it to the"
            + " subsystems' host lists)";
    /** A host NQN and host ID of the node's own, made from one random UUID. */
    private static final String FIX_SHARED = "drain the node, then on the host: u=$(cat"
            + " /proc/sys/kernel/random/uuid); echo nqn.2014-08.org.nvmexpress:uuid:$u > /etc/nvme/hostnqn;"
            + " echo $u > /etc/nvme/hostid; and put the new NQN in the subsystems' host lists"
            + " (docs/install.md#one-identity-per-node)";

    private final HostPaths paths;

    NvmeTcpReadiness(HostPaths paths) {
        this.paths = paths;
    }

    TransportReadiness check() throws IOException {
        Path hostNqn = paths.nvmeHostDirectory().resolve("hostnqn");
        Path hostId = paths.nvmeHostDirectory().resolve("hostid");
        boolean fabrics = loaded("nvme_fabrics") || loaded("nvme_tcp");
        if (!Files.exists(hostNqn) && !Files.exists(hostId) && !fabrics) {
            return TransportReadiness.notSetUp(TransportReadiness.NVME_TCP, "no " + hostNqn + ", no " + hostId
                    + " and no NVMe fabrics module loaded");
        }
        List<Finding> findings = new ArrayList<>();
        Path device = paths.dev().resolve("nvme-fabrics");
        findings.add(Files.exists(device) ? Finding.ok("nvme-fabrics", device + " is there (nvme_fabrics loaded)")
                : Finding.error("nvme-fabrics", "no " + device + ": nvme_fabrics is not loaded, and the plugin"
                + " connects through it", "on the host: modprobe nvme-tcp (it loads nvme-fabrics), and list nvme-tcp"
                + " in /etc/modules-load.d/ for the next boot"));
        findings.add(tcpModule());
        findings.add(nativeMultipath());
        findings.addAll(identity());
        return TransportReadiness.of(TransportReadiness.NVME_TCP, findings);
    }

    private boolean loaded(String module) {
        return Files.isDirectory(paths.sys().resolve("module").resolve(module));
    }

    private Finding tcpModule() throws IOException {
        if (loaded("nvme_tcp")) {
            return Finding.ok("nvme-tcp-module", "nvme_tcp is loaded");
        }
        Optional<String> release = HostFiles.read(paths.kernelRelease()).map(String::strip);
        if (release.isPresent()) {
            Path modules = paths.kernelModules().resolve(release.get());
            for (String list : List.of("modules.dep", "modules.builtin")) {
                if (HostFiles.read(modules.resolve(list)).orElse("").contains("/nvme-tcp.ko")) {
                    // The kernel asks modprobe for it at a TCP connect, but whether the host's modprobe may
                    // load it then is the host's policy: loaded at boot, nothing depends on it.
                    return Finding.warning("nvme-tcp-module", "nvme_tcp is not loaded (this kernel has it: "
                            + list + ")", "on the host: modprobe nvme-tcp, and list nvme-tcp in"
                            + " /etc/modules-load.d/ for the next boot");
                }
            }
        }
        return Finding.error("nvme-tcp-module", "this kernel (" + release.orElse("release unknown") + ") has no"
                + " nvme-tcp module in " + paths.kernelModules(), "install the kernel's extra modules on the host"
                + " (e.g. linux-modules-extra-$(uname -r)) and mount /lib/modules into the container");
    }

    private Finding nativeMultipath() throws IOException {
        Optional<String> value = HostFiles.read(paths.nvmeCoreMultipath())
                .map(String::strip);
        if (value.isEmpty()) {
            return Finding.ok("native-multipath", "nvme_core is not loaded yet: it loads with native NVMe"
                    + " multipath on unless the boot line says nvme_core.multipath=N");
        }
        if (value.get().equals("N")) {
            return Finding.warning("native-multipath", "nvme_core.multipath=N: a volume with several portals is"
                    + " refused (the plugin builds no dm-multipath map over NVMe); one portal works",
                    "boot with nvme_core.multipath=Y (or drop the =N from the kernel command line)");
        }
        return Finding.ok("native-multipath", "nvme_core.multipath=" + value.get() + ": one disk per namespace"
                + " over all its portals");
    }

    private List<Finding> identity() throws IOException {
        Optional<NvmeHostNames> names = NvmeHostNames.configured(paths);
        if (names.isEmpty()) {
            return List.of(Finding.error("hostnqn", "no host NQN in " + paths.nvmeHostDirectory().resolve("hostnqn")
                    + ": the plugin refuses NVMe volumes without one", FIX_NQN));
        }
        return List.of(hostNqn(names.get().hostNqn()), hostId(names.get().hostId()));
    }

    private static Finding hostNqn(String nqn) {
        if (!NQN.matcher(nqn).matches() || nqn.getBytes(StandardCharsets.UTF_8).length > NQN_MAX_BYTES) {
            return Finding.error("hostnqn", "the host NQN \"" + nqn + "\" is not an NQN"
                    + " (nqn.YYYY-MM.reversed.domain:name, at most 223 bytes)", FIX_NQN);
        }
        Optional<String> placeholder = SharedIdentity.placeholderInHostNqn(nqn);
        if (placeholder.isPresent()) {
            return Finding.warning("hostnqn", "the host NQN " + nqn + " is made of the UUID " + placeholder.get()
                    + ", which many machines carry alike (an unset firmware UUID, or an example): other nodes may"
                    + " present the same NQN" + SharedIdentity.CLUSTER_WIDE, FIX_SHARED);
        }
        return Finding.ok("hostnqn", "host NQN " + nqn);
    }

    private Finding hostId(Optional<String> id) {
        if (id.isEmpty()) {
            return Finding.warning("hostid", "no host ID in " + paths.nvmeHostDirectory().resolve("hostid")
                    + ": the kernel makes up one per connection, and a subsystem may take them for several hosts",
                    "on the host: write the UUID of the host NQN (or uuidgen's) to /etc/nvme/hostid");
        }
        if (!UUID.matcher(id.get()).matches()) {
            return Finding.error("hostid", "the host ID \"" + id.get() + "\" is not a UUID: connections are"
                    + " refused", "on the host: write a UUID (the host NQN's, or uuidgen's) to /etc/nvme/hostid");
        }
        if (SharedIdentity.isPlaceholder(id.get())) {
            return Finding.warning("hostid", "the host ID " + id.get() + " is a UUID many machines carry alike"
                    + " (an unset firmware UUID, or an example): other nodes may present the same ID"
                    + SharedIdentity.CLUSTER_WIDE, FIX_SHARED);
        }
        return Finding.ok("hostid", "host ID " + id.get());
    }
}
