package dev.blocknode;

import dev.blocknode.config.PluginConfig;
import dev.blocknode.csi.IdentityService;
import dev.blocknode.csi.NodeService;
import dev.blocknode.csi.server.LoggingInterceptor;
import dev.blocknode.csi.server.MetricsInterceptor;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.doctor.CachedHealth;
import dev.blocknode.doctor.Doctor;
import dev.blocknode.doctor.DoctorAtStart;
import dev.blocknode.doctor.HealthCheck;
import dev.blocknode.doctor.NodeIdentityInfo;
import dev.blocknode.doctor.ToolOwner;
import dev.blocknode.metrics.BuildInfo;
import dev.blocknode.metrics.FenceEvents;
import dev.blocknode.metrics.MetricsEndpoint;
import dev.blocknode.metrics.ProcessMetrics;
import dev.blocknode.metrics.RepairLoopCost;
import dev.blocknode.metrics.RetiredPublications;
import dev.blocknode.metrics.StartupMetrics;
import dev.blocknode.os.ProcessStatus;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.host.KernelFeatures;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.DeviceWaiting;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.repair.PathRepairLoop;
import dev.blocknode.state.BootId;
import dev.blocknode.state.RecordStore;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.iscsi.LoginJournal;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.MultipathMapCount;
import dev.blocknode.transport.san.ScanJournal;
import dev.blocknode.volume.FilesystemSettings;
import dev.blocknode.volume.NodeVolumes;
import dev.blocknode.volume.StagedForRepair;
import dev.blocknode.volume.StartupCheck;
import dev.blocknode.volume.StartupRecovery;
import dev.blocknode.volume.VolumeCountGauges;
import dev.blocknode.volume.VolumeFences;
import dev.blocknode.volume.VolumeLimit;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.read.VolumeDeviceInfo;
import dev.blocknode.volume.read.VolumePathGauges;
import dev.blocknode.volume.record.RecordedStagedVolumes;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The plugin's start-up, step by step and in this order: the metrics registry, the volumes, recovery of what
 * interrupted calls left, fencing, the metrics endpoint, the CSI socket, then the doctor and the repair loop.
 */
final class PluginStart {

    // The plugin's own logger: start-up's lines read as they did when these steps were in Plugin.
    private static final Logger LOG = Logger.getLogger(Plugin.class.getName());

    private PluginStart() {
    }

    /** What start-up's steps build and then share. */
    private record Core(PluginConfig config, Host host, RecordStore store, Transports transports, NodeVolumes volumes) {
    }

    static Plugin start(PluginConfig config, Host host, DeviceWaiting deviceWaiting) throws IOException {
        PrometheusMeterRegistry registry = globalRegistry();
        Core core = buildVolumes(config, host, deviceWaiting.waiter());
        logSettings(core);
        StartupMetrics.Recovery recovery = recoverInterruptedCalls(core);
        resumeFencing(core.volumes());
        StartupMetrics.register(registry, recovery, liveCounts(core, deviceWaiting));
        BuildInfo.register(registry.getPrometheusRegistry(), Version.current(), config.nodeId());
        VolumeCountGauges volumeCounts = new VolumeCountGauges(core.store(), core.volumes(), registry);
        ProcessMetrics processMetrics = new ProcessMetrics(() -> ProcessStatus.residentBytes(host.paths()),
                registry);
        DoctorAtStart doctor = new DoctorAtStart(registry);
        Plugin.Telemetry telemetry;
        try {
            telemetry = new Plugin.Telemetry(registry, serveMetrics(core, registry, volumeCounts), processMetrics);
        } catch (IOException | RuntimeException e) {
            processMetrics.close();
            throw e;
        }
        CachedHealth health = CachedHealth.start(new HealthCheck(config.stateDir(), Plugin.requiredTools()),
                Plugin.HEALTH_CHECK_INTERVAL);
        try {
            UnixSocketServer server = serveCsi(core, registry, health);
            startDoctor(core, doctor);
            Optional<PathRepairLoop> repairs = startRepairs(core);
            return new Plugin(server, core.volumes(), deviceWaiting, health, telemetry,
                    new Plugin.Background(doctor, repairs));
        } catch (IOException | RuntimeException e) {
            core.volumes().stopFencing();
            health.close();
            telemetry.close();
            throw e;
        }
    }

    /**
     * Phase timings, path repairs and fence events are recorded through Micrometer's global registry, and the
     * transports register some of them: the registry goes in first, so that none is made before it (Micrometer
     * warns, and drops what such a meter recorded before the registry came).
     */
    private static PrometheusMeterRegistry globalRegistry() {
        PrometheusMeterRegistry registry = MetricsEndpoint.newRegistry();
        Metrics.addRegistry(registry);
        return registry;
    }

    /** The state directory's records, the transports and the volumes over them. */
    private static Core buildVolumes(PluginConfig config, Host host, DeviceWaiter waiter) throws IOException {
        KubeletPaths paths = new KubeletPaths(config.kubeletRoot());
        RecordStore store = new RecordStore(config.stateDir(), BootId.read(host.paths()));
        FenceSettings fence = FenceSettings.of(config.fencing().takeoverAfter());
        Transports transports = Plugin.transports(host, waiter, fence, new RecordedStagedVolumes(store),
                LoginJournal.in(config.stateDir()), ScanJournal.in(config.stateDir()), config.repairInterval());
        NodeVolumes volumes = new NodeVolumes(host, paths, store, transports,
                new FilesystemSettings(FilesystemType.byName(config.defaultFsType()).orElseThrow(), config.fsck()),
                fencing(config),
                new VolumeLimit.Settings(config.maxVolumesPerNode(),
                        new MultipathMapCount(host.paths())::countNotAmong));
        return new Core(config, host, store, transports, volumes);
    }

    private static VolumeFences.Settings fencing(PluginConfig config) {
        return VolumeFences.Settings.of(config.nodeId(), config.fencing().renewInterval());
    }

    /** The settings an operator checks first in the log: topology, fencing and the volume limit. */
    private static void logSettings(Core core) {
        PluginConfig config = core.config();
        if (!config.topology().isEmpty()) {
            LOG.info(() -> "topology: NodeGetInfo reports " + new TreeMap<>(config.topology()));
        }
        LOG.info(() -> "fencing at the storage: this node's reservation key tag is " + fencing(config).node().tagHex()
                + "; renewed every " + config.fencing().renewInterval().toMillis() + " ms, taken over after "
                + config.fencing().takeoverAfter().toMillis() + " ms unchanged");
        if (config.maxVolumesPerNode() > 0) {
            VolumeLimit.Reading limit = core.volumes().limit().read();
            LOG.info(() -> "volume limit: " + limit.limit() + " blocknode volume(s) (--max-volumes-per-node "
                    + limit.cap() + " less " + limit.outside() + " multipath map(s) no blocknode volume owns), "
                    + limit.held() + " held now");
        }
    }

    /** Undoes or finishes what interrupted calls left, and retires publications no record backs any more. */
    private static StartupMetrics.Recovery recoverInterruptedCalls(Core core) {
        StartupCheck.Report startup = new StartupCheck(core.host(), core.store()).run();
        RetiredPublications.counter(); // scraped at 0 from the start
        StartupRecovery startupRecovery = new StartupRecovery(core.volumes());
        StartupRecovery.Outcome recovery = startupRecovery.run(startup.interrupted());
        startupRecovery.retireStalePublications(startup.published());
        return new StartupMetrics.Recovery(recovery.finished(), recovery.failed(), startup.stale(),
                startup.halfDone());
    }

    private static void resumeFencing(NodeVolumes volumes) throws IOException {
        FenceEvents.registerAll(); // scraped at 0 from the start
        try {
            volumes.startFencing();
        } catch (VolumeException e) {
            throw new IOException("cannot resume fencing: " + e.getMessage(), e);
        }
    }

    private static StartupMetrics.Live liveCounts(Core core, DeviceWaiting deviceWaiting) {
        RecordStore store = core.store();
        StagedForRepair sweptBeside = core.volumes().stagedForRepair();
        return new StartupMetrics.Live(() -> store.unreadable().size(), () -> sweptBeside.kept().size(),
                deviceWaiting::eventDriven);
    }

    /** The Prometheus endpoint, when --metrics-address asks for one, with the series read again at each scrape. */
    private static Optional<MetricsEndpoint> serveMetrics(Core core, PrometheusMeterRegistry registry,
                                                          VolumeCountGauges volumeCounts) throws IOException {
        PluginConfig config = core.config();
        if (config.metricsAddress().isEmpty()) {
            return Optional.empty();
        }
        RecordStore store = core.store();
        VolumePathGauges pathGauges = new VolumePathGauges(core.transports(), store, registry);
        NodeIdentityInfo identity = new NodeIdentityInfo(core.host().paths(), config.nodeId(),
                registry.getPrometheusRegistry());
        VolumeDeviceInfo volumeDevices = new VolumeDeviceInfo(store, core.host().blockDevices(),
                config.kubeletRoot(), config.nodeId(), registry.getPrometheusRegistry());
        return Optional.of(MetricsEndpoint.start(config.metricsAddress().get(), registry, () -> {
            store.recheckUnreadable(); // a file repaired or removed since counts no more
            pathGauges.refresh();
            volumeCounts.refresh();
            identity.refresh();
            volumeDevices.refresh();
        }));
    }

    /** The CSI socket, with the Identity and Node services. */
    private static UnixSocketServer serveCsi(Core core, PrometheusMeterRegistry registry, CachedHealth health)
            throws IOException {
        PluginConfig config = core.config();
        return UnixSocketServer.start(config.socket(), config.socketMode(), config.socketGroup(),
                List.of(new IdentityService(config.driverName(), Version.current(),
                                IdentityService.nodePlugin(!config.topology().isEmpty()), health),
                        new NodeService(core.volumes(), config.nodeId(), config.topology())),
                List.of(new MetricsInterceptor(registry), new LoggingInterceptor()),
                Stream.of(IdentityService.ANSWERED_FROM_MEMORY, NodeService.ANSWERED_FROM_MEMORY)
                        .flatMap(Set::stream).collect(Collectors.toUnmodifiableSet()));
    }

    /** Once the socket is up, off every CSI call's path: readiness and Probe never wait for it. */
    private static void startDoctor(Core core, DoctorAtStart doctor) {
        Host host = core.host();
        PluginConfig config = core.config();
        doctor.start(new Doctor(host.paths(), host.commands(), KernelFeatures.real(), config.repairInterval(),
                ToolOwner.of(System.getenv())), Optional.of(config.kubeletRoot()));
    }

    /** After start-up recovery: the loop repairs only what the records say is staged. */
    private static Optional<PathRepairLoop> startRepairs(Core core) {
        PluginConfig config = core.config();
        Transports transports = core.transports();
        NodeVolumes volumes = core.volumes();
        // The loop's cost series exist with the loop off too: a dashboard then shows no passes, not no data.
        RepairLoopCost.register();
        Optional<PathRepairLoop> repairs = config.repairInterval().isZero() ? Optional.empty() : Optional.of(
                new PathRepairLoop(volumes.stagedForRepair(), transports, config.repairInterval(), System::nanoTime));
        repairs.ifPresent(PathRepairLoop::start);
        return repairs;
    }
}
