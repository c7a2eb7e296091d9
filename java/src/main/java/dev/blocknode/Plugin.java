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
import dev.blocknode.os.uevent.NetlinkUeventSource;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.DeviceWaiting;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.repair.PathRepairLoop;
import dev.blocknode.state.BootId;
import dev.blocknode.state.RecordStore;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.fc.FcTransport;
import dev.blocknode.transport.iscsi.IscsiTransport;
import dev.blocknode.transport.iscsi.LoginJournal;
import dev.blocknode.transport.local.LocalTransport;
import dev.blocknode.transport.nvme.NvmeTcpTransport;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.MultipathMapCount;
import dev.blocknode.transport.san.ScanJournal;
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
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** The running plugin: its parts wired together and its socket open. Used by Main and by the tests. */
public final class Plugin implements AutoCloseable {

    /** How often Probe's answer is refreshed (livenessprobe asks every few seconds; kubelet acts on 3 failures). */
    static final Duration HEALTH_CHECK_INTERVAL = Duration.ofSeconds(3);
    private static final Logger LOG = Logger.getLogger(Plugin.class.getName());

    private final UnixSocketServer server;
    private final NodeVolumes volumes;
    private final DeviceWaiting deviceWaiting;
    private final CachedHealth health;
    private final Telemetry telemetry;
    private final Background background;

    /** What serves the plugin's series: the registry (global while the plugin runs), its endpoint, the process's. */
    private record Telemetry(PrometheusMeterRegistry registry, Optional<MetricsEndpoint> endpoint,
                             ProcessMetrics process) {
        void close() {
            endpoint.ifPresent(MetricsEndpoint::close);
            process.close();
            Metrics.removeRegistry(registry);
        }
    }

    /** The work started once the socket is up: the doctor's checks and the path repair loop. */
    private record Background(DoctorAtStart doctor, Optional<PathRepairLoop> repairs) {
        void close() {
            repairs.ifPresent(PathRepairLoop::close);
            doctor.close();
        }
    }

    private Plugin(UnixSocketServer server, NodeVolumes volumes, DeviceWaiting deviceWaiting, CachedHealth health,
                   Telemetry telemetry, Background background) {
        this.server = server;
        this.volumes = volumes;
        this.deviceWaiting = deviceWaiting;
        this.health = health;
        this.telemetry = telemetry;
        this.background = background;
    }

    public static Plugin start(PluginConfig config, Host host) throws IOException {
        DeviceWaiting deviceWaiting = DeviceWaiting.start(config.deviceWait(), config.devicePollInterval(),
                NetlinkUeventSource::open);
        try {
            return start(config, host, deviceWaiting);
        } catch (IOException | RuntimeException e) {
            deviceWaiting.close();
            throw e;
        }
    }

    /**
     * The transports the node serves, in the order their keys are tried. Also what {@code blocknode pv} checks
     * PVs with, so that a transport added here is one it knows.
     */
    public static Transports transports(Host host, DeviceWaiter waiter, FenceSettings fence, StagedVolumes staged) {
        return transports(host, waiter, fence, staged, LoginJournal.NONE, ScanJournal.NONE, Duration.ZERO);
    }

    /**
     * The plugin's own transports: what they log in to and scan in is journaled in the state directory for the
     * sweep, and their path repairs space their attempts by the repair loop's interval (zero: no loop).
     */
    static Transports transports(Host host, DeviceWaiter waiter, FenceSettings fence, StagedVolumes staged,
                                 LoginJournal journal, ScanJournal scans, Duration repairInterval) {
        return new Transports(List.of(new LocalTransport(host), new FcTransport(host, waiter, fence, scans),
                new IscsiTransport(host, host.paths().iscsiDatabase(), waiter, fence, journal, scans, repairInterval),
                new NvmeTcpTransport(host, waiter, staged, repairInterval)));
    }

    /** What start-up's steps build and then share. */
    private record Core(PluginConfig config, Host host, RecordStore store, Transports transports, NodeVolumes volumes) {
    }

    private static Plugin start(PluginConfig config, Host host, DeviceWaiting deviceWaiting) throws IOException {
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
        Telemetry telemetry;
        try {
            telemetry = new Telemetry(registry, serveMetrics(core, registry, volumeCounts), processMetrics);
        } catch (IOException | RuntimeException e) {
            processMetrics.close();
            throw e;
        }
        CachedHealth health = CachedHealth.start(new HealthCheck(config.stateDir(), requiredTools()),
                HEALTH_CHECK_INTERVAL);
        try {
            UnixSocketServer server = serveCsi(core, registry, health);
            startDoctor(core, doctor);
            Optional<PathRepairLoop> repairs = startRepairs(core);
            return new Plugin(server, core.volumes(), deviceWaiting, health, telemetry,
                    new Background(doctor, repairs));
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
        Transports transports = transports(host, waiter, fence, new RecordedStagedVolumes(store),
                LoginJournal.in(config.stateDir()), ScanJournal.in(config.stateDir()), config.repairInterval());
        NodeVolumes volumes = new NodeVolumes(host, paths, store, transports,
                FilesystemType.byName(config.defaultFsType()).orElseThrow(), config.fsck(), fencing(config),
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

    /** What volumes run and Probe checks for on PATH: blkid, then each filesystem's tools. */
    static List<String> requiredTools() {
        return Stream.concat(Stream.of("blkid"),
                Arrays.stream(FilesystemType.values()).flatMap(type -> type.tools().stream())).toList();
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

    public UnixSocketServer server() {
        return server;
    }

    public Optional<MetricsEndpoint> metrics() {
        return telemetry.endpoint();
    }

    public NodeVolumes volumes() {
        return volumes;
    }

    /**
     * Waits at most {@code timeout} for the doctor's checks run at start to end, so that their series are in a
     * scrape (tests); true when they have.
     */
    public boolean awaitDoctorAtStart(Duration timeout) throws InterruptedException {
        return background.doctor().awaitDone(timeout.toMillis());
    }

    public PrometheusMeterRegistry registry() {
        return telemetry.registry();
    }

    public void shutdown(Duration grace) {
        background.close();
        server.shutdown(grace);
        volumes.stopFencing();
        telemetry.close();
        deviceWaiting.close();
        health.close();
    }

    /** How device waits end: on kernel uevents or by polling. */
    public DeviceWaiting deviceWaiting() {
        return deviceWaiting;
    }

    @Override
    public void close() {
        shutdown(Duration.ofSeconds(5));
    }
}
