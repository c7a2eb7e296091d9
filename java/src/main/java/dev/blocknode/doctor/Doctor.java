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
    private final ToolOwner tools;

    /** For a plugin with the default --repair-interval, in its image. */
    public Doctor(HostPaths paths, CommandRunner commands, KernelFeatures features) {
        this(paths, commands, features, DEFAULT_REPAIR_INTERVAL, ToolOwner.IMAGE);
    }

    /**
     * @param repairInterval the plugin's --repair-interval ({@link Duration#ZERO}: its repair loop is off)
     * @param tools whose tools run: the image's, or this machine's (how the findings name them and their fixes)
     */
    public Doctor(HostPaths paths, CommandRunner commands, KernelFeatures features, Duration repairInterval,
                  ToolOwner tools) {
        this.paths = paths;
        this.commands = commands;
        this.features = features;
        this.repairInterval = repairInterval;
        this.tools = tools;
    }

    /** The check of a transport whose checks could not read what they need. */
    static final String UNREADABLE = "unreadable";

    /** What an iSCSI volume is left with on a node without dm-multipath. */
    private static final String ISCSI_ALONE = "a volume with one portal runs on that path alone, whose disk nothing"
            + " brings back once its session is gone, and one with several portals gets a map that no multipathd"
            + " checks";
    /** What a Fibre Channel volume is left with on a node without dm-multipath. */
    private static final String FC_ALONE = "a LUN seen through one port runs on that path alone, with nothing to"
            + " take over when the port's link goes down, and one seen through several ports gets a map that no"
            + " multipathd checks";

    /** The plugin's default --repair-interval. */
    public static final Duration DEFAULT_REPAIR_INTERVAL = Duration.ofSeconds(30);

    /** @param kubeletRoot checked too when given */
    public DoctorReport examine(Optional<Path> kubeletRoot) {
        List<TransportReadiness> transports = new ArrayList<>();
        TransportReadiness multipath = null;
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
            TransportReadiness iscsi = guarded(TransportReadiness.ISCSI,
                    () -> new IscsiReadiness(paths, commands, tools).check(found));
            multipath = guarded(TransportReadiness.MULTIPATH,
                    () -> new MultipathReadiness(paths, commands, repairInterval).check(found));
            transports.add(SanMultipath.alongside(iscsi, multipath, "iSCSI", ISCSI_ALONE));
            transports.add(multipath);
        }
        TransportReadiness fc = guarded(TransportReadiness.FC, () -> new FcReadiness(paths).check());
        transports.add(multipath == null ? fc : SanMultipath.alongside(fc, multipath, "Fibre Channel", FC_ALONE));
        transports.add(guarded(TransportReadiness.NVME_TCP, () -> new NvmeTcpReadiness(paths).check()));
        transports.add(guarded(TransportReadiness.KERNEL,
                () -> new KernelReadiness(paths, features, kubeletRoot).check()));
        return new DoctorReport(transports);
    }

    private interface Check {
        TransportReadiness run() throws IOException;
    }

    private TransportReadiness guarded(String transport, Check check) {
        try {
            return check.run();
        } catch (IOException | RuntimeException e) {
            return unreadable(transport, e.getMessage());
        } catch (LinkageError e) { // the identity files are read through the native library, as the plugin reads them
            return unreadable(transport, "the native library cannot be loaded: " + e.getMessage());
        }
    }

    private TransportReadiness unreadable(String transport, String why) {
        return TransportReadiness.of(transport, List.of(Finding.error(UNREADABLE, "cannot check " + transport
                + ": " + why, tools == ToolOwner.IMAGE ? "check that the container mounts the host's /sys, /dev,"
                + " /etc and /proc as the chart does" : "run blocknode doctor as root on the node")));
    }
}
