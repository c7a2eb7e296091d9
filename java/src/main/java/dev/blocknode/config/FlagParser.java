package dev.blocknode.config;


import dev.blocknode.logging.LogFormat;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Parses {@code --flag=value} and {@code --flag value}. Unknown flags and bad values are errors that
 * say which flag and why: a plugin that starts with a typo in its configuration is worse than one that
 * does not start.
 */
public final class FlagParser {

    /** CSI: at most 63 characters, alphanumerics at both ends, with dashes, dots and alphanumerics between. */
    private static final Pattern DRIVER_NAME = Pattern.compile("[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?");

    public static final String USAGE = """
            blocknode: a CSI node plugin for Fibre Channel, iSCSI, NVMe/TCP and local block storage

            usage: java -jar blocknode.jar [flags]
                   java -jar blocknode.jar client [--endpoint unix:///path] RPC [REQUEST]   (see client --help)

              --mode MODE             node (stage and publish volumes on this node: the DaemonSet) or
                                      controller (ControllerPublish/Unpublish for the external-attacher,
                                      so Kubernetes refuses a second node a ReadWriteOnce volume) (default node)
              --endpoint URL          gRPC endpoint, unix:///path/to/csi.sock (default unix:///csi/csi.sock)
              --node-id ID            this node's id as the controller knows it (default: the host name)
              --driver-name NAME      CSI driver name (default %s)
              --kubelet-root DIR      kubelet's root; every path in a request must lie under it
                                      (default /var/lib/kubelet)
              --state-dir DIR         where staging records are kept (default /var/lib/blocknode)
              --metrics-address A     host:port for Prometheus metrics at /metrics (default: off)
              --log-format F          json or text (default json)
              --socket-mode MODE      socket permissions, octal (default 0660)
              --socket-group GROUP    socket group (default: the process's group)
              --shutdown-grace DUR    how long SIGTERM waits for running calls, e.g. 30s (default 30s)
              --max-volumes-per-node  reported in NodeGetInfo; 0 means no limit (default 0)
              --default-fs-type T     filesystem for blank volumes whose request names none (ext4|xfs, default ext4)
              --device-wait MODE      how to wait for SAN disks and multipath maps: events (kernel uevents,
                                      with a slow poll behind them) or poll (default events; falls back
                                      to poll when the uevent socket cannot be opened)
              --device-poll-interval DUR  the poll's interval, e.g. 1s or 0.5s (default 1s with events,
                                      0.25s with poll)
              --fencing-renew-interval DUR  how often each fenced volume's reservation key is renewed
                                      at the storage, the proof this node is alive (default 10s)
              --fencing-takeover-after DUR  how long another node's reservation key must stand still before
                                      a stage here may preempt it; at least 3 x the renew interval (default 60s)
              --demo                  also create, stage and publish a loop-backed demo volume (for make run)
              --help                  this text
            """.formatted(PluginConfig.DEFAULT_DRIVER_NAME);

    private FlagParser() {
    }

    public static PluginConfig parse(String[] args) {
        Map<String, String> flags = collect(args);
        String endpoint = take(flags, "endpoint", "unix:///csi/csi.sock");
        PluginConfig config = new PluginConfig(
                socketPath(endpoint),
                take(flags, "node-id", hostName()),
                driverName(take(flags, "driver-name", PluginConfig.DEFAULT_DRIVER_NAME)),
                Path.of(take(flags, "kubelet-root", "/var/lib/kubelet")),
                Path.of(take(flags, "state-dir", "/var/lib/blocknode")),
                Optional.ofNullable(flags.remove("metrics-address")).filter(s -> !s.isBlank()),
                logFormat(take(flags, "log-format", "json")),
                socketMode(take(flags, "socket-mode", "0660")),
                Optional.ofNullable(flags.remove("socket-group")).filter(s -> !s.isBlank()),
                duration("shutdown-grace", take(flags, "shutdown-grace", "30s")),
                nonNegative("max-volumes-per-node", take(flags, "max-volumes-per-node", "0")),
                fsType(take(flags, "default-fs-type", "ext4")),
                DeviceWaitMode.parse("device-wait", take(flags, "device-wait", "events")),
                Optional.ofNullable(flags.remove("device-poll-interval")).map(v -> positive("device-poll-interval", v)),
                Boolean.parseBoolean(take(flags, "demo", "false")),
                PluginMode.parse("mode", take(flags, "mode", "node")),
                new PluginConfig.Fencing(
                        positive("fencing-renew-interval", take(flags, "fencing-renew-interval", "10s")),
                        positive("fencing-takeover-after", take(flags, "fencing-takeover-after", "60s"))));
        if (!flags.isEmpty()) {
            throw new IllegalArgumentException("unknown flag --" + flags.keySet().iterator().next()
                    + " (see --help)");
        }
        if (config.demo() && config.mode() == PluginMode.CONTROLLER) {
            throw new IllegalArgumentException("--demo stages a volume on this node: it needs --mode node");
        }
        if (config.nodeId().isBlank()) {
            throw new IllegalArgumentException("--node-id is not given and neither $NODE_NAME nor the host name"
                    + " gives one; pass --node-id");
        }
        if (config.nodeId().length() > 256) {
            throw new IllegalArgumentException("--node-id must be at most 256 characters");
        }
        return config;
    }

    private static Map<String, String> collect(String[] args) {
        Map<String, String> flags = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument \"" + arg + "\" (see --help)");
            }
            String body = arg.substring(2);
            int eq = body.indexOf('=');
            if (eq >= 0) {
                flags.put(body.substring(0, eq), body.substring(eq + 1));
            } else if (body.equals("demo") || body.equals("help")) {
                flags.put(body, "true");
            } else if (i + 1 < args.length) {
                flags.put(body, args[++i]);
            } else {
                throw new IllegalArgumentException("flag --" + body + " needs a value");
            }
        }
        return flags;
    }

    private static String take(Map<String, String> flags, String name, String fallback) {
        String value = flags.remove(name);
        return value == null ? fallback : value;
    }

    /** The socket path of a unix:// endpoint (also used by the command-line client). */
    public static Path socketPathOf(String endpoint) {
        return socketPath(endpoint);
    }

    /** A duration like 30s or 2m (also used by the command-line client). */
    public static Duration durationOf(String flag, String value) {
        return duration(flag, value);
    }

    static Path socketPath(String endpoint) {
        String path;
        if (endpoint.startsWith("unix://")) {
            path = endpoint.substring("unix://".length());
        } else if (endpoint.startsWith("unix:")) {
            path = endpoint.substring("unix:".length());
        } else if (endpoint.startsWith("/")) {
            path = endpoint;
        } else {
            throw new IllegalArgumentException("--endpoint must be unix:///absolute/path, got \"" + endpoint + "\"");
        }
        if (!path.startsWith("/")) {
            throw new IllegalArgumentException("--endpoint must name an absolute socket path, got \"" + endpoint + "\"");
        }
        // sun_path holds 108 bytes including the terminating NUL.
        if (path.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 107) {
            throw new IllegalArgumentException("--endpoint socket path is longer than the 107 bytes a Unix socket allows");
        }
        return Path.of(path);
    }

    static String driverName(String name) {
        if (!DRIVER_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("--driver-name \"" + name + "\" is not a valid CSI driver name: at most"
                    + " 63 characters, alphanumerics at both ends, dashes, dots and alphanumerics between");
        }
        return name;
    }

    private static LogFormat logFormat(String value) {
        try {
            return LogFormat.valueOf(value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--log-format must be json or text, got \"" + value + "\"");
        }
    }

    static Set<PosixFilePermission> socketMode(String octal) {
        int mode;
        try {
            mode = Integer.parseInt(octal, 8);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--socket-mode must be octal, like 0660, got \"" + octal + "\"");
        }
        if (mode < 0 || mode > 0777) {
            throw new IllegalArgumentException("--socket-mode must be between 0000 and 0777, got " + octal);
        }
        PosixFilePermission[] bits = {
                PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
                PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
                PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ};
        Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
        for (int bit = 0; bit < bits.length; bit++) {
            if ((mode & (1 << bit)) != 0) {
                permissions.add(bits[bit]);
            }
        }
        return permissions;
    }

    static Duration duration(String flag, String value) {
        Duration parsed;
        try {
            parsed = Duration.parse("PT" + value.toUpperCase(Locale.ROOT));
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("--" + flag + " must be a duration like 30s or 2m, got \"" + value + "\"");
        }
        if (parsed.isNegative()) {
            throw new IllegalArgumentException("--" + flag + " must not be negative, got \"" + value + "\"");
        }
        return parsed;
    }

    private static Duration positive(String flag, String value) {
        Duration parsed = duration(flag, value);
        if (parsed.isZero()) {
            throw new IllegalArgumentException("--" + flag + " must be more than zero, got \"" + value + "\"");
        }
        return parsed;
    }

    private static long nonNegative(String flag, String value) {
        try {
            long n = Long.parseLong(value);
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new IllegalArgumentException("--" + flag + " must be a whole number >= 0, got \"" + value + "\"");
    }

    private static String fsType(String value) {
        if (!value.equals("ext4") && !value.equals("xfs")) {
            throw new IllegalArgumentException("--default-fs-type must be ext4 or xfs, got \"" + value + "\"");
        }
        return value;
    }

    /**
     * $NODE_NAME (the DaemonSet sets it from the downward API), else the kernel's host name. Not a DNS
     * lookup: a node whose name does not resolve must still start.
     */
    private static String hostName() {
        String fromEnv = System.getenv("NODE_NAME");
        if (fromEnv != null && !fromEnv.isBlank()) {
            return fromEnv.strip();
        }
        try {
            String kernel = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/hostname")).strip();
            if (!kernel.isEmpty()) {
                return kernel;
            }
        } catch (java.io.IOException ignored) {
            // not Linux, or /proc not mounted: ask the resolver instead
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "";
        }
    }
}
