package dev.blocknode.config;


import dev.blocknode.logging.LogFormat;

import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
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
        PluginMode mode) {

    public static final String DEFAULT_DRIVER_NAME = "block.csi.blocknode.dev";

    public String socketModeOctal() {
        return PosixFilePermissions.toString(socketMode);
    }
}
