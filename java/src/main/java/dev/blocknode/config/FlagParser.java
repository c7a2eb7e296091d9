package dev.blocknode.config;


import dev.blocknode.logging.LogFormat;
import dev.blocknode.logging.LogLevel;
import dev.blocknode.os.wait.DeviceWaitMode;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
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

    /**
     * One flag: its name, the placeholder of its value (empty for a switch), the value the parser falls back to
     * when the flag is not given ({@code null}: computed, or none), the default as a reader sees it, and what it
     * does. {@link #parse}, {@link #USAGE} and {@link #markdownTable} all read {@link #FLAGS}, so --help, the
     * generated docs/reference/flags.md and the parser cannot disagree.
     */
    public record Flag(String name, String placeholder, String fallback, String shownDefault, String meaning) {

        /** The default as --help and the docs show it. */
        public String defaultText() {
            return shownDefault != null ? shownDefault : fallback;
        }
    }

    public static final List<Flag> FLAGS = List.of(
            new Flag("mode", "MODE", "node", null, "`node`: the Identity and Node services (stage, publish, stats,"
                    + " expand, health), the DaemonSet on every node; `controller`: the Identity and Controller services,"
                    + " ControllerPublishVolume, ControllerUnpublishVolume and ValidateVolumeCapabilities only, for the"
                    + " external-attacher, so that"
                    + " Kubernetes refuses a second node a ReadWriteOnce volume"),
            new Flag("endpoint", "URL", "unix:///csi/csi.sock", null, "the gRPC endpoint, a Unix socket"
                    + " (`unix:///path/to/csi.sock`)"),
            new Flag("node-id", "ID", null, "`$NODE_NAME`, else the host name", "this node's id, as NodeGetInfo"
                    + " reports it (at most 256 characters)"),
            new Flag("driver-name", "NAME", PluginConfig.DEFAULT_DRIVER_NAME, null, "CSI driver name (validated"
                    + " against the spec's rules: at most 63 characters, alphanumerics at both ends, dashes, dots and"
                    + " alphanumerics between)"),
            new Flag("kubelet-root", "DIR", "/var/lib/kubelet", null, "kubelet's root directory: every path in a"
                    + " request must lie under it"),
            new Flag("state-dir", "DIR", "/var/lib/blocknode", null, "where the per-volume staging records and the"
                    + " publications journal are kept"),
            new Flag("metrics-address", "HOST:PORT", null, "off", "serve Prometheus metrics at"
                    + " `http://HOST:PORT/metrics`; an empty host listens on every address"),
            new Flag("log-format", "FORMAT", "json", null, "`json` (one object per line) or `text`"),
            new Flag("log-level", "LEVEL", "info", null, "the level of the plugin's own loggers: `error`,"
                    + " `warning`, `info`, or `fine` (also spelled `debug`), which adds what each step of a call did"),
            new Flag("log-level-file", "FILE", null, "none", "a file naming the level (as `--log-level`), read"
                    + " every 5 s: while it names one, it wins over `--log-level`, so the level changes without a"
                    + " restart (the chart mounts a ConfigMap key here). It is read on a thread of its own, the first"
                    + " time too, never waiting: links are followed, and only a regular file of at most 64 bytes is"
                    + " read; a FIFO, a directory, a device or a larger file there is one warning in the log"
                    + " (`log level file FILE cannot be read: ...; the level stays ...`) and never delays the start"),
            new Flag("socket-mode", "MODE", "0660", null, "permissions of the socket file, octal"),
            new Flag("socket-group", "GROUP", null, "the process's group", "group of the socket file"),
            new Flag("shutdown-grace", "DURATION", "30s", null, "on SIGTERM, how long running calls may finish"
                    + " before they are cancelled"),
            new Flag("max-volumes-per-node", "N", "0", null, "the most volumes this node takes: blocknode's"
                    + " own plus every multipath map on the node no blocknode volume owns (a LUN attached by hand or"
                    + " another driver, a SAN boot disk); NodeGetInfo reports N less those maps (at least 1), and a"
                    + " stage beyond it is `RESOURCE_EXHAUSTED`; 0 means no limit (see docs/volumes.md)"),
            new Flag("topology", "KEY=VALUE[,...]", null, "none", "report these topology segments in NodeGetInfo"
                    + " (kubelet makes them node labels), so that PVs can name, in their node affinity, the nodes"
                    + " that reach their LUN, e.g. `topology.blocknode.dev/fabric=fab-a`; keys and values are"
                    + " checked as Kubernetes label keys and values, keys under kubernetes.io and k8s.io are"
                    + " refused"),
            new Flag("default-fs-type", "TYPE", "ext4", null, "filesystem for a blank volume whose request names"
                    + " none (`ext4` or `xfs`)"),
            new Flag("fsck", "MODE", "preen", null, "`preen`: an ext4 filesystem a stage finds on its device (not one"
                    + " it has just made) is checked with `e2fsck -p` before it is mounted, and a filesystem that needs"
                    + " a manual repair is refused (`FAILED_PRECONDITION`); `off`: never (a volume turns it off alone"
                    + " with volume_context `fsck: off`; see docs/volumes.md)"),
            new Flag("device-wait", "MODE", "events", null, "how SAN waits (disks after a scan, a multipath map, a"
                    + " device going away) end: `events` wakes them on the kernel's uevents (a netlink socket;"
                    + " blocknode falls back to polling, with one warning, where it cannot be opened), `poll` only"
                    + " polls"),
            new Flag("device-poll-interval", "DURATION", null, "`1s` with events, `0.25s` with poll", "with"
                    + " `events`, the slow poll behind them (catches anything not announced); with `poll`, the poll"
                    + " itself"),
            new Flag("fencing-renew-interval", "DURATION", "10s", null, "how often each fenced volume's reservation"
                    + " key is renewed at the storage: the proof of life another node's takeover reads"),
            new Flag("fencing-takeover-after", "DURATION", "60s", null, "how long another node's reservation key"
                    + " must stand still before a stage here may preempt it; at least 3 x `--fencing-renew-interval`,"
                    + " or the plugin refuses to start"),
            new Flag("repair-interval", "DURATION", "30s", null, "how often the lost paths of staged volumes that"
                    + " have returned are brought back (an FC remote port back after its dev_loss_tmo, an iSCSI session"
                    + " that is gone logged in again, an NVMe/TCP controller deleted after its ctrl_loss_tmo connected"
                    + " again), and after each pass what blocknode made that no staging record names any more is swept"
                    + " (an iSCSI session and node record it can prove it logged in, that carry no disk); `0` turns the"
                    + " repair loop and its sweep off (see docs/operations.md#path-repair)"),
            new Flag("demo", "", "false", "off", "also create, stage and publish a loop-backed demo volume (what"
                    + " `make run` uses); needs `--mode node`"));

    public static final String USAGE = """
            blocknode: a CSI node plugin for Fibre Channel, iSCSI, NVMe/TCP and local block storage

            usage: java -jar blocknode.jar [flags]
                   java -jar blocknode.jar client [--endpoint unix:///path] RPC [REQUEST]   (see client --help)
                   java -jar blocknode.jar status [--state-dir DIR] [--volume ID] [-o text|json]   (see status --help)
                   java -jar blocknode.jar doctor [--kubelet-root DIR] [-o text|json]   (see doctor --help)
                   java -jar blocknode.jar pv [--claim] [--namespace NS] LUNS.yaml|LUNS.csv|-   (see pv --help)
                   java -jar blocknode.jar --version
            (in the image: blocknode ..., which runs this jar with the image's Java; docs/reference/cli.md)

            """ + usageLines() + "  --help                  this text\n  --version               the version, and exit\n";

    private FlagParser() {
    }

    /** The flags as a Markdown table (docs/reference/flags.md is made of it; see FlagsReferenceUnitTest). */
    public static String markdownTable() {
        StringBuilder out = new StringBuilder("| flag | default | meaning |\n| --- | --- | --- |\n");
        for (Flag flag : FLAGS) {
            String shown = flag.defaultText();
            String dflt = shown.startsWith("`") || shown.contains(" ") ? shown : "`" + shown + "`";
            out.append("| `--").append(flag.name()).append(flag.placeholder().isEmpty() ? "" : " " + flag.placeholder())
                    .append("` | ").append(dflt).append(" | ").append(flag.meaning().replace("|", "\\|"))
                    .append(" |\n");
        }
        return out.toString();
    }

    private static String usageLines() {
        StringBuilder out = new StringBuilder();
        for (Flag flag : FLAGS) {
            String head = "  --" + flag.name() + (flag.placeholder().isEmpty() ? "" : " " + flag.placeholder());
            String text = (flag.meaning() + " (default " + flag.defaultText() + ")").replace("`", "");
            StringBuilder line = new StringBuilder(head.length() < 26 ? head + " ".repeat(26 - head.length())
                    : head + "\n" + " ".repeat(26));
            int width = line.length() - line.lastIndexOf("\n") - 1;
            for (String word : text.split(" ")) {
                if (width + word.length() > 112) {
                    line.append("\n").append(" ".repeat(26));
                    width = 26;
                }
                line.append(word).append(' ');
                width += word.length() + 1;
            }
            out.append(line.toString().replaceAll(" +\n", "\n").stripTrailing()).append('\n');
        }
        return out.toString();
    }

    private static Flag flag(String name) {
        for (Flag flag : FLAGS) {
            if (flag.name().equals(name)) {
                return flag;
            }
        }
        throw new IllegalStateException("flag --" + name + " is not in FlagParser.FLAGS");
    }


    public static PluginConfig parse(String[] args) {
        Map<String, String> flags = collect(args);
        String endpoint = take(flags, "endpoint");
        PluginConfig config = PluginConfig.builder()
                .socket(socketPath(endpoint))
                .nodeId(Optional.ofNullable(take(flags, "node-id")).orElseGet(FlagParser::hostName))
                .driverName(driverName(take(flags, "driver-name")))
                .kubeletRoot(Path.of(take(flags, "kubelet-root")))
                .stateDir(Path.of(take(flags, "state-dir")))
                .metricsAddress(Optional.ofNullable(take(flags, "metrics-address")).filter(s -> !s.isBlank()))
                .logFormat(logFormat(take(flags, "log-format")))
                .socketMode(socketMode(take(flags, "socket-mode")))
                .socketGroup(Optional.ofNullable(take(flags, "socket-group")).filter(s -> !s.isBlank()))
                .shutdownGrace(duration("shutdown-grace", take(flags, "shutdown-grace")))
                .maxVolumesPerNode(nonNegative("max-volumes-per-node", take(flags, "max-volumes-per-node")))
                .defaultFsType(fsType(take(flags, "default-fs-type")))
                .deviceWait(deviceWaitMode(take(flags, "device-wait")))
                .devicePollInterval(Optional.ofNullable(take(flags, "device-poll-interval"))
                        .map(v -> positive("device-poll-interval", v)))
                .demo(Boolean.parseBoolean(take(flags, "demo")))
                .mode(PluginMode.parse("mode", take(flags, "mode")))
                .fencing(new PluginConfig.Fencing(
                        positive("fencing-renew-interval", take(flags, "fencing-renew-interval")),
                        positive("fencing-takeover-after", take(flags, "fencing-takeover-after"))))
                .logLevel(LogLevel.parse("log-level", take(flags, "log-level")))
                .logLevelFile(Optional.ofNullable(take(flags, "log-level-file")).filter(s -> !s.isBlank())
                        .map(Path::of))
                .topology(Topology.parse("topology", take(flags, "topology")))
                .fsck(fsck(take(flags, "fsck")))
                .repairInterval(repairInterval(take(flags, "repair-interval")))
                .build();
        if (!flags.isEmpty()) {
            throw new IllegalArgumentException("unknown flag --" + flags.keySet().iterator().next()
                    + " (see --help)");
        }
        if (config.demo() && config.mode() == PluginMode.CONTROLLER) {
            throw new IllegalArgumentException("--demo stages a volume on this node: it needs --mode node");
        }
        if (!config.topology().isEmpty() && config.mode() == PluginMode.CONTROLLER) {
            throw new IllegalArgumentException("--topology is what NodeGetInfo reports of this node: it needs"
                    + " --mode node");
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

    /** The flag's value, else its fallback in {@link #FLAGS} (null: none). */
    private static DeviceWaitMode deviceWaitMode(String value) {
        try {
            return DeviceWaitMode.valueOf(value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--device-wait must be events or poll, got \"" + value + "\"");
        }
    }

    private static String take(Map<String, String> flags, String name) {
        String value = flags.remove(name);
        return value == null ? flag(name).fallback() : value;
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

    public static String driverName(String name) {
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

    /** A duration, or {@code 0} without a unit: the repair loop off. */
    private static Duration repairInterval(String value) {
        return value.strip().equals("0") ? Duration.ZERO : duration("repair-interval", value);
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

    /** --fsck: true for preen, false for off. */
    private static boolean fsck(String value) {
        return switch (value) {
            case "preen" -> true;
            case "off" -> false;
            default -> throw new IllegalArgumentException("--fsck must be preen or off, got \"" + value + "\"");
        };
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
