package dev.blocknode.e2e;

import dev.blocknode.config.PluginConfig;
import dev.blocknode.csi.server.LoggingInterceptor;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.e2e.controller.LoopVolumes;
import dev.blocknode.e2e.controller.TestControllerService;
import dev.blocknode.csi.IdentityService;
import dev.blocknode.csi.v1.PluginCapability;
import dev.blocknode.logging.LogSetup;
import dev.blocknode.os.exec.ProcessCommandRunner;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The csi-sanity test tier in one process: the test controller (Identity + Controller on
 * --controller-endpoint, volumes under --work-dir) and the sanity front (on --front-endpoint, forwarding
 * to the node plugin on --plugin-endpoint). Serves until SIGTERM/SIGINT, then detaches every loop device
 * it attached and deletes every file it created.
 */
public final class SanityMain {

    /** The test controller provides the CONTROLLER_SERVICE and grows volumes online; it is always ready. */
    private static final List<PluginCapability> CONTROLLER_PLUGIN = List.of(
            PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
                    .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE)).build(),
            PluginCapability.newBuilder().setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
                    .setType(PluginCapability.VolumeExpansion.Type.ONLINE)).build());

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
        LogSetup.configure(PluginConfig.LogFormat.TEXT);
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

        LoopVolumes volumes = new LoopVolumes(Path.of(flags.get("work-dir")), new ProcessCommandRunner());
        UnixSocketServer controller;
        SanityFront front;
        try {
            controller = UnixSocketServer.start(controllerSocket, PosixFilePermissions.fromString("rw-rw----"),
                    Optional.empty(),
                    List.of(new IdentityService(driverName, "e2e", CONTROLLER_PLUGIN, List::of),
                            new TestControllerService(volumes, nodeId)),
                    List.of(new LoggingInterceptor()));
        } catch (IOException | RuntimeException e) {
            volumes.close();
            throw e;
        }
        try {
            front = SanityFront.start(frontSocket, pluginSocket);
        } catch (IOException | RuntimeException e) {
            controller.shutdown(Duration.ofSeconds(5));
            volumes.close();
            throw e;
        }
        LOG.info(() -> "test controller on unix://" + controllerSocket + " for node " + nodeId
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
                report("stopped; every loop device detached and every volume file deleted");
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
                "driver-name");
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
        return flags;
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
