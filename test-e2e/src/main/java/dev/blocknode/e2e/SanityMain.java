package dev.blocknode.e2e;

import dev.blocknode.csi.IdentityService;
import dev.blocknode.csi.server.LoggingInterceptor;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.csi.v1.PluginCapability;
import dev.blocknode.e2e.controller.LioFcBackend;
import dev.blocknode.e2e.controller.LoopBackend;
import dev.blocknode.e2e.controller.NvmetBackend;
import dev.blocknode.e2e.controller.TestControllerService;
import dev.blocknode.e2e.controller.TgtBackend;
import dev.blocknode.e2e.controller.VolumeBackend;
import dev.blocknode.e2e.controller.Volumes;
import dev.blocknode.logging.LogFormat;
import dev.blocknode.logging.LogSetup;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.transport.fc.Wwpn;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The csi-sanity test tier in one process: the test controller (Identity + Controller on
 * --controller-endpoint, volumes under --work-dir) and the sanity front (on --front-endpoint, forwarding
 * to the node plugin on --plugin-endpoint). Volumes are loop devices (--backend loop, the host tier), LUNs
 * of a tgt iSCSI target (--backend tgt), namespaces of an nvmet subsystem (--backend nvmet) or LUNs of LIO's
 * tcm_fc target (--backend fc), the last three in the VM tier. Serves until SIGTERM/SIGINT, then withdraws
 * every volume it exposed (loop devices detached; LUNs and then the target deleted) and deletes every
 * file it created.
 */
public final class SanityMain {

    /**
     * The test controller provides the CONTROLLER_SERVICE and is always ready. A loop device and an LIO fileio
     * LUN grow under a mounted filesystem (ONLINE); a tgt LUN grows only while no command is in flight on it (it
     * is deleted and added again: see {@link TgtBackend}) and an nvmet namespace is disabled and enabled again
     * ({@link NvmetBackend}), so those backends claim OFFLINE expansion.
     */
    static List<PluginCapability> controllerPlugin(VolumeBackend backend) {
        PluginCapability.VolumeExpansion.Type expansion = backend instanceof TgtBackend
                || backend instanceof NvmetBackend ? PluginCapability.VolumeExpansion.Type.OFFLINE
                : PluginCapability.VolumeExpansion.Type.ONLINE;
        return List.of(
                PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
                        .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE)).build(),
                PluginCapability.newBuilder().setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
                        .setType(expansion)).build());
    }

    private static final Logger LOG = Logger.getLogger(SanityMain.class.getName());

    static final String USAGE = """
            blocknode-e2e: test controller and sanity front for running csi-sanity against blocknode

            usage: java -jar blocknode-e2e.jar [flags]

              --controller-endpoint URL  where the test controller listens, unix:///path (required)
              --front-endpoint URL       where the sanity front listens, unix:///path (required)
              --plugin-endpoint URL      the node plugin's endpoint, unix:///path (required)
              --node-id ID               the plugin's --node-id: the only node publishes may name (required)
              --work-dir DIR             where volume files are created (required)
              --driver-name NAME         the controller's GetPluginInfo name (default block.csi.blocknode.dev)
              --backend loop|tgt|nvmet|fc  how volumes reach the node (default loop):
                                           loop: a loop device per volume (the plugin's local transport)
                                           tgt:  a LUN per volume of an iSCSI target that this process
                                                 creates on the local tgtd (the plugin's iscsi transport)
              --tgt-tid N                tgt: the target id to create (default 1; must not exist yet)
              --tgt-iqn IQN              tgt: the target's name (default iqn.2024-01.dev.blocknode:sanity)
              --tgt-portals LIST         tgt: comma-separated address:port where nodes reach tgtd, the
                                         first one as targetPortal (default 127.0.0.1:3260)
                                           nvmet: a namespace per volume of an NVMe subsystem that this
                                                 process creates on the kernel's target (configfs; the
                                                 plugin's nvme-tcp transport)
              --nvmet-nqn NQN            nvmet: the subsystem's name (default nqn.2024-01.dev.blocknode:sanity)
              --nvmet-portals LIST       nvmet: comma-separated IPv4 address:port to listen on, one port each
                                         (ports 21, 22...; default 127.0.0.1:4420)
                                           fc:   a LUN per volume of LIO's Fibre Channel target (tcm_fc,
                                                 configfs) on every target port (the plugin's fc transport)
              --fc-targets LIST          fc: comma-separated WWPNs of the array's FC ports (tcm_fc ports),
                                         each given a TPG exporting every LUN (required with fc)
              --fc-initiators LIST       fc: comma-separated WWPNs of the node's FC ports, each given an ACL
                                         on every TPG (required with fc)
              --node-expand-secrets FILE the sanity front adds these secrets (a properties file, KEY=VALUE
                                         lines) to each NodeExpandVolume that carries none, as kubelet sends a
                                         StorageClass's node-expand secret (csi-sanity cannot); never logged
              --help                     this text
            """;

    private static final List<String> REQUIRED = List.of(
            "controller-endpoint", "front-endpoint", "plugin-endpoint", "node-id", "work-dir");

    private SanityMain() {
    }

    public static void main(String[] args) {
        if (List.of(args).contains("--help") || List.of(args).contains("-h")) {
            System.out.print(USAGE);
            return;
        }
        Map<String, String> flags;
        try {
            flags = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("blocknode-e2e: " + e.getMessage());
            System.exit(2);
            return;
        }
        LogSetup.configure(LogFormat.TEXT);
        try {
            run(flags);
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.SEVERE, "blocknode-e2e stopped: " + e.getMessage(), e);
            System.exit(1);
        }
    }

    private static void run(Map<String, String> flags) throws IOException {
        Path controllerSocket = socketPath(flags.get("controller-endpoint"));
        Path frontSocket = socketPath(flags.get("front-endpoint"));
        Path pluginSocket = socketPath(flags.get("plugin-endpoint"));
        String nodeId = flags.get("node-id");
        String driverName = flags.getOrDefault("driver-name", "block.csi.blocknode.dev");
        Map<String, String> expandSecrets = nodeExpandSecrets(flags.get("node-expand-secrets"));

        VolumeBackend backend = backend(flags, new ProcessCommandRunner());
        Volumes volumes;
        try {
            volumes = new Volumes(Path.of(flags.get("work-dir")), backend);
        } catch (IOException | RuntimeException e) {
            backend.close();
            throw e;
        }
        UnixSocketServer controller;
        SanityFront front;
        try {
            controller = UnixSocketServer.start(controllerSocket, PosixFilePermissions.fromString("rw-rw----"),
                    Optional.empty(),
                    List.of(new IdentityService(driverName, "e2e", controllerPlugin(backend), List::of),
                            new TestControllerService(volumes, nodeId)),
                    List.of(new LoggingInterceptor()));
        } catch (IOException | RuntimeException e) {
            volumes.close();
            throw e;
        }
        try {
            front = SanityFront.start(frontSocket, pluginSocket, expandSecrets);
        } catch (IOException | RuntimeException e) {
            controller.shutdown(Duration.ofSeconds(5));
            volumes.close();
            throw e;
        }
        LOG.info(() -> "test controller (" + backend.name() + " volumes) on unix://" + controllerSocket + " for node " + nodeId
                + "; sanity front on unix://" + frontSocket);

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // java.util.logging resets itself in a shutdown hook of its own that runs concurrently with
            // this one, so what happens here is reported on stderr directly.
            report("stopping");
            front.close();
            controller.shutdown(Duration.ofSeconds(5));
            try {
                volumes.releaseAll().forEach(SanityMain::report);
                volumes.backend().close();
                report("stopped; every volume withdrawn (" + volumes.backend().name() + ") and its file deleted");
            } catch (IOException | RuntimeException e) {
                report("SEVERE: volume cleanup incomplete: " + e.getMessage());
            }
            stopped.countDown();
        }, "shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void report(String message) {
        System.err.println(Instant.now() + " SanityMain: " + message);
    }

    /** {@code --name value} or {@code --name=value}; every flag known, every required one present. */
    static Map<String, String> parse(String[] args) {
        Set<String> known = Set.of("controller-endpoint", "front-endpoint", "plugin-endpoint", "node-id", "work-dir",
                "driver-name", "backend", "tgt-tid", "tgt-iqn", "tgt-portals", "nvmet-nqn", "nvmet-portals",
                "fc-targets", "fc-initiators", "node-expand-secrets");
        Map<String, String> flags = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument \"" + arg + "\" (see --help)");
            }
            String name = arg.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new IllegalArgumentException("--" + name + " needs a value");
            }
            if (!known.contains(name)) {
                throw new IllegalArgumentException("unknown flag --" + name + " (see --help)");
            }
            if (value.isEmpty()) {
                throw new IllegalArgumentException("--" + name + " must not be empty");
            }
            flags.put(name, value);
        }
        for (String name : REQUIRED) {
            if (!flags.containsKey(name)) {
                throw new IllegalArgumentException("--" + name + " is required (see --help)");
            }
        }
        for (String name : List.of("controller-endpoint", "front-endpoint", "plugin-endpoint")) {
            socketPath(flags.get(name));
        }
        String backend = flags.getOrDefault("backend", "loop");
        if (!List.of("loop", "tgt", "nvmet", "fc").contains(backend)) {
            throw new IllegalArgumentException("--backend must be loop, tgt, nvmet or fc, not \"" + backend + "\"");
        }
        for (String other : List.of("tgt", "nvmet", "fc")) {
            if (!backend.equals(other) && flags.keySet().stream().anyMatch(f -> f.startsWith(other + "-"))) {
                throw new IllegalArgumentException("--" + other + "-* flags need --backend " + other);
            }
        }
        if (backend.equals("fc")) {
            for (String name : List.of("fc-targets", "fc-initiators")) {
                if (!flags.containsKey(name)) {
                    throw new IllegalArgumentException("--" + name + " is required with --backend fc");
                }
                for (String wwpn : list(flags.get(name))) {
                    try {
                        Wwpn.normalize(wwpn);
                    } catch (IllegalArgumentException e) {
                        throw new IllegalArgumentException("--" + name + ": " + e.getMessage());
                    }
                }
            }
        }
        try {
            int tid = Integer.parseInt(flags.getOrDefault("tgt-tid", "1"));
            if (tid < 1) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--tgt-tid must be a positive number");
        }
        return flags;
    }

    static VolumeBackend backend(Map<String, String> flags, ProcessCommandRunner commands) throws IOException {
        String backend = flags.getOrDefault("backend", "loop");
        if (backend.equals("nvmet")) {
            return NvmetBackend.start(commands, Path.of("/sys/kernel/config/nvmet"),
                    flags.getOrDefault("nvmet-nqn", "nqn.2024-01.dev.blocknode:sanity"),
                    list(flags.getOrDefault("nvmet-portals", "127.0.0.1:4420")), 21);
        }
        if (backend.equals("fc")) {
            return LioFcBackend.start(Path.of("/sys/kernel/config/target"), list(flags.get("fc-targets")),
                    list(flags.get("fc-initiators")));
        }
        if (!backend.equals("tgt")) {
            return new LoopBackend(commands);
        }
        return TgtBackend.start(commands, Integer.parseInt(flags.getOrDefault("tgt-tid", "1")),
                flags.getOrDefault("tgt-iqn", "iqn.2024-01.dev.blocknode:sanity"),
                list(flags.getOrDefault("tgt-portals", "127.0.0.1:3260")));
    }

    /** The secrets in a properties file (none without one); an error names the file, never a value. */
    static Map<String, String> nodeExpandSecrets(String file) throws IOException {
        if (file == null) {
            return Map.of();
        }
        Properties properties = new Properties();
        try (Reader reader = Files.newBufferedReader(Path.of(file))) {
            properties.load(reader);
        }
        Map<String, String> secrets = new HashMap<>();
        properties.stringPropertyNames().forEach(key -> secrets.put(key, properties.getProperty(key)));
        if (secrets.isEmpty()) {
            throw new IOException("--node-expand-secrets: " + file + " holds no KEY=VALUE line");
        }
        return Map.copyOf(secrets);
    }

    /** "a, b,c" as [a, b, c]. */
    private static List<String> list(String text) {
        return List.of(text.split(",")).stream().map(String::strip).filter(p -> !p.isEmpty()).toList();
    }

    /** unix:///abs/path (or unix:/abs/path, or a bare absolute path) to the socket's path. */
    static Path socketPath(String endpoint) {
        String path = endpoint;
        if (path.startsWith("unix://")) {
            path = path.substring("unix://".length());
        } else if (path.startsWith("unix:")) {
            path = path.substring("unix:".length());
        }
        if (!path.startsWith("/")) {
            throw new IllegalArgumentException("endpoint " + endpoint + " is not unix:///absolute/path");
        }
        if (path.getBytes(java.nio.charset.StandardCharsets.UTF_8).length >= 108) {
            throw new IllegalArgumentException("socket path " + path + " is 108 bytes or longer; Unix sockets"
                    + " cannot bind it");
        }
        return Path.of(path);
    }
}
