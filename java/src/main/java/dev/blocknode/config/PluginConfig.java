package dev.blocknode.config;

import dev.blocknode.logging.LogFormat;
import dev.blocknode.logging.LogLevel;
import dev.blocknode.os.wait.DeviceWaitMode;

import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The plugin's settings, from its command-line flags (CSI driver conventions). Made with {@link #builder()}, which
 * names each value: FlagParser sets every one from its flag; a test sets only those it cares about.
 */
public record PluginConfig(
        Path socket,
        String nodeId,
        String driverName,
        Path kubeletRoot,
        Path stateDir,
        Optional<String> metricsAddress,
        LogFormat logFormat,
        Set<PosixFilePermission> socketMode,
        Optional<String> socketGroup,
        Duration shutdownGrace,
        long maxVolumesPerNode,
        String defaultFsType,
        DeviceWaitMode deviceWait,
        Optional<Duration> devicePollInterval,
        boolean demo,
        PluginMode mode,
        Fencing fencing,
        LogLevel logLevel,
        Optional<Path> logLevelFile,
        Map<String, String> topology,
        boolean fsck,
        Duration repairInterval) {

    /** Why 30 s: a returned path is back in use within a minute, and a pass over healthy volumes reads sysfs only. */
    public static final Duration DEFAULT_REPAIR_INTERVAL = Duration.ofSeconds(30);

    public PluginConfig {
        topology = Map.copyOf(topology);
    }

    public static final String DEFAULT_DRIVER_NAME = "block.csi.blocknode.dev";

    /**
     * Fencing at the storage: how often each fenced volume's reservation key is renewed (the proof of life), and
     * how long another node's key must stand still before a stage here may preempt it (at least 3 renewals).
     */
    public record Fencing(Duration renewInterval, Duration takeoverAfter) {

        public static final Fencing DEFAULTS = new Fencing(Duration.ofSeconds(10), Duration.ofSeconds(60));

        public Fencing {
            if (renewInterval.isZero() || renewInterval.isNegative()) {
                throw new IllegalArgumentException("--fencing-renew-interval must be more than zero, got "
                        + renewInterval.toMillis() + " ms");
            }
            if (takeoverAfter.compareTo(renewInterval.multipliedBy(3)) < 0) {
                throw new IllegalArgumentException("--fencing-takeover-after (" + takeoverAfter.toMillis()
                        + " ms) must be at least 3 x --fencing-renew-interval (" + renewInterval.toMillis()
                        + " ms): a live holder must be seen renewing before another node may take its volumes");
            }
        }
    }

    public String socketModeOctal() {
        return PosixFilePermissions.toString(socketMode);
    }

    /** A builder whose unset values are the flags' defaults (FlagParserUnitTest keeps them equal). */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The settings by name. Only the socket, the node id, the kubelet root and the state directory have no default:
     * the flags' defaults for those (under /var/lib, the host name) are not what a test or an embedder wants.
     */
    public static final class Builder {
        private Path socket;
        private String nodeId;
        private String driverName = DEFAULT_DRIVER_NAME;
        private Path kubeletRoot;
        private Path stateDir;
        private Optional<String> metricsAddress = Optional.empty();
        private LogFormat logFormat = LogFormat.JSON;
        private Set<PosixFilePermission> socketMode = PosixFilePermissions.fromString("rw-rw----");
        private Optional<String> socketGroup = Optional.empty();
        private Duration shutdownGrace = Duration.ofSeconds(30);
        private long maxVolumesPerNode;
        private String defaultFsType = "ext4";
        private DeviceWaitMode deviceWait = DeviceWaitMode.EVENTS;
        private Optional<Duration> devicePollInterval = Optional.empty();
        private boolean demo;
        private PluginMode mode = PluginMode.NODE;
        private Fencing fencing = Fencing.DEFAULTS;
        private LogLevel logLevel = LogLevel.INFO;
        private Optional<Path> logLevelFile = Optional.empty();
        private Map<String, String> topology = Map.of();
        private boolean fsck = true;
        private Duration repairInterval = DEFAULT_REPAIR_INTERVAL;

        private Builder() {
        }

        public Builder socket(Path value) {
            socket = value;
            return this;
        }

        public Builder nodeId(String value) {
            nodeId = value;
            return this;
        }

        public Builder driverName(String value) {
            driverName = value;
            return this;
        }

        public Builder kubeletRoot(Path value) {
            kubeletRoot = value;
            return this;
        }

        public Builder stateDir(Path value) {
            stateDir = value;
            return this;
        }

        public Builder metricsAddress(Optional<String> value) {
            metricsAddress = value;
            return this;
        }

        public Builder logFormat(LogFormat value) {
            logFormat = value;
            return this;
        }

        public Builder socketMode(Set<PosixFilePermission> value) {
            socketMode = value;
            return this;
        }

        public Builder socketGroup(Optional<String> value) {
            socketGroup = value;
            return this;
        }

        public Builder shutdownGrace(Duration value) {
            shutdownGrace = value;
            return this;
        }

        public Builder maxVolumesPerNode(long value) {
            maxVolumesPerNode = value;
            return this;
        }

        public Builder defaultFsType(String value) {
            defaultFsType = value;
            return this;
        }

        public Builder deviceWait(DeviceWaitMode value) {
            deviceWait = value;
            return this;
        }

        public Builder devicePollInterval(Optional<Duration> value) {
            devicePollInterval = value;
            return this;
        }

        public Builder demo(boolean value) {
            demo = value;
            return this;
        }

        public Builder mode(PluginMode value) {
            mode = value;
            return this;
        }

        public Builder fencing(Fencing value) {
            fencing = value;
            return this;
        }

        public Builder logLevel(LogLevel value) {
            logLevel = value;
            return this;
        }

        public Builder logLevelFile(Optional<Path> value) {
            logLevelFile = value;
            return this;
        }

        public Builder topology(Map<String, String> value) {
            topology = value;
            return this;
        }

        public Builder fsck(boolean value) {
            fsck = value;
            return this;
        }

        public Builder repairInterval(Duration value) {
            repairInterval = value;
            return this;
        }

        public PluginConfig build() {
            return new PluginConfig(Objects.requireNonNull(socket, "socket"),
                    Objects.requireNonNull(nodeId, "nodeId"), driverName,
                    Objects.requireNonNull(kubeletRoot, "kubeletRoot"), Objects.requireNonNull(stateDir, "stateDir"),
                    metricsAddress, logFormat, socketMode, socketGroup, shutdownGrace, maxVolumesPerNode,
                    defaultFsType, deviceWait, devicePollInterval, demo, mode, fencing, logLevel, logLevelFile,
                    topology, fsck, repairInterval);
        }
    }
}
