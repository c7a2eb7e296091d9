package dev.blocknode.doctor;

import dev.blocknode.os.AbstractSockets;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.host.KernelFeatures;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Runs every check, transport by transport. A check that cannot read what it needs is an error of that transport
 * ({@code check} "unreadable"), never the end of the others. Read-only; takes a second or so (two tools).
 */
public final class Doctor {

    private final HostPaths paths;
    private final CommandRunner commands;
    private final KernelFeatures features;
    private final Duration repairInterval;

    /** For a plugin with the default --repair-interval. */
    public Doctor(HostPaths paths, CommandRunner commands, KernelFeatures features) {
        this(paths, commands, features, DEFAULT_REPAIR_INTERVAL);
    }

    /** @param repairInterval the plugin's --repair-interval ({@link Duration#ZERO}: its repair loop is off) */
    public Doctor(HostPaths paths, CommandRunner commands, KernelFeatures features, Duration repairInterval) {
        this.paths = paths;
        this.commands = commands;
        this.features = features;
        this.repairInterval = repairInterval;
    }

    /** The plugin's default --repair-interval. */
    public static final Duration DEFAULT_REPAIR_INTERVAL = Duration.ofSeconds(30);

    /** @param kubeletRoot checked too when given */
    public DoctorReport examine(Optional<Path> kubeletRoot) {
        List<TransportReadiness> transports = new ArrayList<>();
        AbstractSockets sockets;
        try {
            sockets = AbstractSockets.read(paths.unixSockets());
        } catch (IOException | RuntimeException e) {
            sockets = null;
            String why = "cannot read " + paths.unixSockets() + ": " + e.getMessage();
            transports.add(unreadable(TransportReadiness.ISCSI, why));
            transports.add(unreadable(TransportReadiness.MULTIPATH, why));
        }
        if (sockets != null) {
            AbstractSockets found = sockets;
            transports.add(guarded(TransportReadiness.ISCSI, () -> new IscsiReadiness(paths, commands).check(found)));
            transports.add(guarded(TransportReadiness.MULTIPATH,
                    () -> new MultipathReadiness(paths, commands, repairInterval).check(found)));
        }
        transports.add(guarded(TransportReadiness.FC, () -> new FcReadiness(paths).check()));
        transports.add(guarded(TransportReadiness.NVME_TCP, () -> new NvmeTcpReadiness(paths).check()));
        transports.add(guarded(TransportReadiness.KERNEL,
                () -> new KernelReadiness(paths, features, kubeletRoot).check()));
        return new DoctorReport(transports);
    }

    private interface Check {
        TransportReadiness run() throws IOException;
    }

    private static TransportReadiness guarded(String transport, Check check) {
        try {
            return check.run();
        } catch (IOException | RuntimeException e) {
            return unreadable(transport, e.getMessage());
        } catch (LinkageError e) { // the identity files are read through the native library, as the plugin reads them
            return unreadable(transport, "the native library cannot be loaded: " + e.getMessage());
        }
    }

    private static TransportReadiness unreadable(String transport, String why) {
        return TransportReadiness.of(transport, List.of(Finding.error("unreadable", "cannot check " + transport
                + ": " + why, "check that the container mounts the host's /sys, /dev, /etc and /proc as the chart"
                + " does")));
    }
}
