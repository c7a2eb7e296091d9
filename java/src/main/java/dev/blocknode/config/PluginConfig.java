package dev.blocknode.config;


import dev.blocknode.logging.LogFormat;
import dev.blocknode.logging.LogLevel;
import dev.blocknode.os.wait.DeviceWaitMode;

import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** The plugin's settings, from its command-line flags (CSI driver conventions). */
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

    /**
     * The settings with an ext4 filesystem preened before its mount (--fsck preen, the default) and the default
     * repair interval.
     */
    public PluginConfig(Path socket, String nodeId, String driverName, Path kubeletRoot, Path stateDir,
                        Optional<String> metricsAddress, LogFormat logFormat, Set<PosixFilePermission> socketMode,
                        Optional<String> socketGroup, Duration shutdownGrace, long maxVolumesPerNode,
                        String defaultFsType, DeviceWaitMode deviceWait, Optional<Duration> devicePollInterval,
                        boolean demo, PluginMode mode, Fencing fencing, LogLevel logLevel, Optional<Path> logLevelFile,
                        Map<String, String> topology) {
        this(socket, nodeId, driverName, kubeletRoot, stateDir, metricsAddress, logFormat, socketMode, socketGroup,
                shutdownGrace, maxVolumesPerNode, defaultFsType, deviceWait, devicePollInterval, demo, mode, fencing,
                logLevel, logLevelFile, topology, true, DEFAULT_REPAIR_INTERVAL);
    }

    /**
     * The settings with the plugin's loggers at {@code info}, the default, no log level file, no topology, ext4
     * preened and the default repair interval.
     */
    public PluginConfig(Path socket, String nodeId, String driverName, Path kubeletRoot, Path stateDir,
                        Optional<String> metricsAddress, LogFormat logFormat, Set<PosixFilePermission> socketMode,
                        Optional<String> socketGroup, Duration shutdownGrace, long maxVolumesPerNode,
                        String defaultFsType, DeviceWaitMode deviceWait, Optional<Duration> devicePollInterval,
                        boolean demo, PluginMode mode, Fencing fencing) {
        this(socket, nodeId, driverName, kubeletRoot, stateDir, metricsAddress, logFormat, socketMode, socketGroup,
                shutdownGrace, maxVolumesPerNode, defaultFsType, deviceWait, devicePollInterval, demo, mode, fencing,
                LogLevel.INFO, Optional.empty(), Map.of(), true, DEFAULT_REPAIR_INTERVAL);
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
}
