package dev.blocknode.e2e.controller;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandRunner;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.logging.Logger;

/**
 * Volumes as namespaces of one NVMe subsystem served by the kernel's own target (nvmet over TCP, set up
 * through configfs; the VM tier's array), handed to the node plugin's {@code nvme-tcp} transport: volume_context
 * {@code subsysNQN}, {@code nvmePortals}, {@code namespaceUUID} and {@code namespaceID}. The backend creates
 * its subsystem (open to every host) and one port per portal when it starts, adds a namespace per volume and
 * takes all of it down when it closes; it never touches another subsystem or port.
 *
 * <p>Each namespace is a loop device over the volume's file: nvmet's file backend opens the file O_DIRECT,
 * which tmpfs (where the VM tier keeps volume files) refuses. Its UUID (also its NGUID) is random per volume,
 * so a node that still held a stale namespace of a deleted volume could never take it for a new one; NSIDs
 * go round 1..{@link #MAX_NSID} like tgt's LUN numbers.
 *
 * <p>Growing: the loop device takes the file's new size (losetup --set-capacity), then the namespace is
 * disabled and enabled again, which makes nvmet read the size again (csi-sanity grows before staging).
 */
public final class NvmetBackend implements VolumeBackend {

    private static final Logger LOG = Logger.getLogger(NvmetBackend.class.getName());

    static final int MAX_NSID = 1024;

    private final CommandRunner commands;
    private final Configfs.Rmdir rmdir;
    private final Path nvmet;
    private final String nqn;
    private final List<String> portals;
    private final List<Integer> ports;
    private final Map<Integer, String> loops = new HashMap<>();
    private int last;

    private NvmetBackend(CommandRunner commands, Configfs.Rmdir rmdir, Path nvmet, String nqn, List<String> portals,
                         List<Integer> ports) {
        this.commands = commands;
        this.rmdir = rmdir;
        this.nvmet = nvmet;
        this.nqn = nqn;
        this.portals = List.copyOf(portals);
        this.ports = ports;
    }

    /**
     * Creates subsystem {@code nqn} under {@code nvmet} (/sys/kernel/config/nvmet) and ports
     * {@code firstPort}, {@code firstPort + 1}... one per portal (IPv4 address:port), each exporting it.
     *
     * @throws IOException when configfs refuses (a subsystem or port with that name exists: not ours to use)
     */
    public static NvmetBackend start(CommandRunner commands, Path nvmet, String nqn, List<String> portals,
                                     int firstPort) throws IOException {
        return start(commands, Configfs.Rmdir.KERNEL, nvmet, nqn, portals, firstPort);
    }

    static NvmetBackend start(CommandRunner commands, Configfs.Rmdir rmdir, Path nvmet, String nqn, List<String> portals,
                              int firstPort) throws IOException {
        if (portals.isEmpty()) {
            throw new IllegalArgumentException("at least one portal is needed");
        }
        List<Integer> ports = new ArrayList<>(); // the ports made so far: a failed start removes only those
        NvmetBackend backend = new NvmetBackend(commands, rmdir, nvmet, nqn, portals, ports);
        Path subsystem = backend.subsystem();
        Files.createDirectory(subsystem);
        try {
            write(subsystem.resolve("attr_allow_any_host"), "1");
            for (int i = 0; i < portals.size(); i++) {
                String[] address = portals.get(i).split(":");
                Path port = Files.createDirectory(nvmet.resolve("ports").resolve(Integer.toString(firstPort + i)));
                ports.add(firstPort + i);
                write(port.resolve("addr_trtype"), "tcp");
                write(port.resolve("addr_adrfam"), "ipv4");
                write(port.resolve("addr_traddr"), address[0]);
                write(port.resolve("addr_trsvcid"), address[1]);
                // (configfs makes a port's subsystems/ and a subsystem's namespaces/ itself; a plain
                // directory, as in the unit test, needs them made: createDirectories does either.)
                Files.createSymbolicLink(Files.createDirectories(port.resolve("subsystems")).resolve(nqn), subsystem);
            }
        } catch (IOException | RuntimeException e) {
            backend.close();
            throw e;
        }
        LOG.info(() -> "nvmet subsystem " + nqn + " created; portals " + portals);
        return backend;
    }

    @Override
    public String name() {
        return "nvmet";
    }

    @Override
    public synchronized Placement expose(String volumeId, Path file, long bytes) throws IOException {
        int nsid = nextNsid();
        String loop = LoopBackend.attach(commands, file);
        loops.put(nsid, loop);
        last = nsid;
        String uuid = UUID.randomUUID().toString();
        try {
            Files.createDirectories(namespace(nsid).getParent());
            Path namespace = Files.createDirectory(namespace(nsid));
            write(namespace.resolve("device_path"), loop);
            write(namespace.resolve("device_uuid"), uuid);
            write(namespace.resolve("device_nguid"), uuid);
            write(namespace.resolve("enable"), "1");
        } catch (IOException e) {
            withdraw(nsid);
            throw e;
        }
        Map<String, String> context = new LinkedHashMap<>();
        context.put("subsysNQN", nqn);
        context.put("nvmePortals", String.join(",", portals));
        context.put("namespaceUUID", uuid);
        context.put("namespaceID", Integer.toString(nsid));
        return new Placement("namespace " + nsid + " of " + nqn + " (" + loop + ")", context);
    }

    @Override
    public synchronized Placement grow(Placement placement, Path file, long bytes) throws IOException {
        int nsid = nsidOf(placement);
        commands.runChecked(Command.of("losetup", "--set-capacity", loops.get(nsid)));
        write(namespace(nsid).resolve("enable"), "0");
        write(namespace(nsid).resolve("enable"), "1");
        LOG.info(() -> "namespace " + nsid + " of " + nqn + " enabled again at " + bytes + " bytes");
        return placement;
    }

    @Override
    public synchronized void withdraw(Placement placement, Path file) throws IOException {
        withdraw(nsidOf(placement));
    }

    /** Disables and removes the namespace, then detaches its loop device; what is already gone is fine. */
    private void withdraw(int nsid) throws IOException {
        Path namespace = namespace(nsid);
        if (Files.isDirectory(namespace)) {
            write(namespace.resolve("enable"), "0");
            rmdir.remove(namespace);
        }
        String loop = loops.remove(nsid);
        if (loop != null) {
            commands.runChecked(Command.of("losetup", "--detach", loop));
        }
    }

    /** Unexports the subsystem from its ports, removes them and it (every namespace is withdrawn by now). */
    @Override
    public synchronized void close() throws IOException {
        for (int id : ports) {
            Path port = nvmet.resolve("ports").resolve(Integer.toString(id));
            Files.deleteIfExists(port.resolve("subsystems").resolve(nqn));
            if (Files.isDirectory(port)) {
                rmdir.remove(port);
            }
        }
        if (Files.isDirectory(subsystem())) {
            rmdir.remove(subsystem());
        }
        LOG.info(() -> "nvmet subsystem " + nqn + " and its ports deleted");
    }

    private Path subsystem() {
        return nvmet.resolve("subsystems").resolve(nqn);
    }

    private Path namespace(int nsid) {
        return subsystem().resolve("namespaces").resolve(Integer.toString(nsid));
    }

    private int nextNsid() throws IOException {
        for (int i = 1; i <= MAX_NSID; i++) {
            int nsid = (last + i - 1) % MAX_NSID + 1;
            if (!loops.containsKey(nsid)) {
                return nsid;
            }
        }
        throw new IOException("subsystem " + nqn + " has no free NSID (all " + MAX_NSID + " in use)");
    }

    private static int nsidOf(Placement placement) {
        return Integer.parseInt(placement.volumeContext().get("namespaceID"));
    }

    private static void write(Path attribute, String value) throws IOException {
        Configfs.write(attribute, value, "nvmet");
    }
}
