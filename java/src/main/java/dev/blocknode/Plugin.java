package dev.blocknode;

import dev.blocknode.config.PluginConfig;
import dev.blocknode.csi.IdentityService;
import dev.blocknode.csi.NodeService;
import dev.blocknode.csi.server.LoggingInterceptor;
import dev.blocknode.csi.server.MetricsInterceptor;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.doctor.Doctor;
import dev.blocknode.doctor.ToolOwner;
import dev.blocknode.metrics.BuildInfo;
import dev.blocknode.metrics.FenceEvents;
import dev.blocknode.metrics.MetricsEndpoint;
import dev.blocknode.metrics.RepairLoopCost;
import dev.blocknode.metrics.RetiredPublications;
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
import dev.blocknode.transport.san.ScanJournal;
import dev.blocknode.transport.local.LocalTransport;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.MultipathMapCount;
import dev.blocknode.transport.nvme.NvmeTcpTransport;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.NodeVolumes;
import dev.blocknode.volume.record.RecordedStagedVolumes;
import dev.blocknode.volume.StartupCheck;
import dev.blocknode.volume.StagedForRepair;
import dev.blocknode.volume.StartupRecovery;
import dev.blocknode.volume.VolumeCountGauges;
import dev.blocknode.volume.VolumeFences;
import dev.blocknode.volume.VolumeLimit;
import dev.blocknode.volume.read.VolumeDeviceInfo;
import dev.blocknode.volume.read.VolumePathGauges;
import dev.blocknode.volume.filesystem.FilesystemType;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.logging.Logger;
import java.util.stream.Stream;

/** The running plugin: its parts wired together and its socket open. Used by Main and by the tests. */
public final class Plugin implements AutoCloseable {

    /** How often Probe's answer is refreshed (livenessprobe asks every few seconds; kubelet acts on 3 failures). */
    static final Duration HEALTH_CHECK_INTERVAL = Duration.ofSeconds(3);
    private static final Logger LOG = Logger.getLogger(Plugin.class.getName());

    private final UnixSocketServer server;
    private final Optional<MetricsEndpoint> metrics;
    private final NodeVolumes volumes;
    private final PrometheusMeterRegistry registry;
    private final DeviceWaiting deviceWaiting;
    private final CachedHealth health;
    private final ProcessMetrics processMetrics;
    private final DoctorAtStart doctor;
    private final Optional<PathRepairLoop> repairs;

    private Plugin(UnixSocketServer server, Optional<MetricsEndpoint> metrics, NodeVolumes volumes,
                   PrometheusMeterRegistry registry, DeviceWaiting deviceWaiting, CachedHealth health,
                   ProcessMetrics processMetrics, DoctorAtStart doctor, Optional<PathRepairLoop> repairs) {
        this.server = server;
        this.metrics = metrics;
        this.volumes = volumes;
        this.registry = registry;
        this.deviceWaiting = deviceWaiting;
        this.health = health;
        this.processMetrics = processMetrics;
        this.doctor = doctor;
        this.repairs = repairs;
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

    private static Plugin start(PluginConfig config, Host host, DeviceWaiting deviceWaiting) throws IOException {
        // Phase timings, path repairs and fence events are recorded through Micrometer's global registry, and
        // the transports made below register some of them: the registry goes in first, so that none is made
        // before it (Micrometer warns, and drops what such a meter recorded before the registry came).
        PrometheusMeterRegistry registry = MetricsEndpoint.newRegistry();
        Metrics.addRegistry(registry);
        KubeletPaths paths = new KubeletPaths(config.kubeletRoot());
        RecordStore store = new RecordStore(config.stateDir(), BootId.read(host.paths()));
        DeviceWaiter waiter = deviceWaiting.waiter();
        FenceSettings fence = FenceSettings.of(config.fencing().takeoverAfter());
        Transports transports = transports(host, waiter, fence, new RecordedStagedVolumes(store),
                LoginJournal.in(config.stateDir()), ScanJournal.in(config.stateDir()), config.repairInterval());
        VolumeFences.Settings fencing = VolumeFences.Settings.of(config.nodeId(), config.fencing().renewInterval());
        NodeVolumes volumes = new NodeVolumes(host, paths, store, transports,
                FilesystemType.byName(config.defaultFsType()).orElseThrow(), config.fsck(), fencing,
                new VolumeLimit.Settings(config.maxVolumesPerNode(),
                        new MultipathMapCount(host.paths())::countNotAmong));
        if (!config.topology().isEmpty()) {
            LOG.info(() -> "topology: NodeGetInfo reports " + new java.util.TreeMap<>(config.topology()));
        }
        LOG.info(() -> "fencing at the storage: this node's reservation key tag is " + fencing.node().tagHex()
                + "; renewed every " + config.fencing().renewInterval().toMillis() + " ms, taken over after "
                + config.fencing().takeoverAfter().toMillis() + " ms unchanged");
        if (config.maxVolumesPerNode() > 0) {
            VolumeLimit.Reading limit = volumes.limit().read();
            LOG.info(() -> "volume limit: " + limit.limit() + " blocknode volume(s) (--max-volumes-per-node "
                    + limit.cap() + " less " + limit.outside() + " multipath map(s) no blocknode volume owns), "
                    + limit.held() + " held now");
        }
        StartupCheck.Report startup = new StartupCheck(host, store).run();
        RetiredPublications.counter(); // scraped at 0 from the start
        StartupRecovery startupRecovery = new StartupRecovery(volumes);
        StartupRecovery.Outcome recovery = startupRecovery.run(startup.interrupted());
        startupRecovery.retireStalePublications(startup.published());
        FenceEvents.registerAll(); // scraped at 0 from the start
        try {
            volumes.startFencing();
        } catch (VolumeException e) {
            throw new IOException("cannot resume fencing: " + e.getMessage(), e);
        }
        Gauge.builder("blocknode_startup_recovered_records", recovery::finished)
                .description("attaches undone and teardowns finished at start, left by interrupted calls")
                .register(registry);
        Gauge.builder("blocknode_startup_recovery_failures", recovery::failed)
                .description("interrupted attaches or teardowns that could not be finished at start (see the log)")
                .register(registry);
        Gauge.builder("blocknode_startup_stale_records", startup::stale)
                .description("staging records at start whose device or mount was not in place").register(registry);
        Gauge.builder("blocknode_startup_half_done_records", startup::halfDone)
                .description("staging records at start left mid-operation by an interrupted call").register(registry);
        Gauge.builder("blocknode_unreadable_staging_records", store, s -> s.unreadable().size())
                .description("staging record files that cannot be read (corrupt, of a newer format, not a regular"
                        + " file, too large): each one's volume is refused until the file is repaired or removed;"
                        + " the log names them").register(registry);
        StagedForRepair sweptBeside = volumes.stagedForRepair();
        Gauge.builder("blocknode_path_sweep_kept", sweptBeside, s -> s.kept().size())
                .description("leftovers the repair loop's last sweep found that no staging record names, but left"
                        + " alone because blocknode cannot prove it may remove them (a session that carries a disk, a"
                        + " logout that failed, a LUN's map that is open or mounted); the log and NodeGetStorageHealth"
                        + " name them").register(registry);
        Gauge.builder("blocknode_device_waits_event_driven", deviceWaiting, w -> w.eventDriven() ? 1 : 0)
                .description("1 while device waits end on kernel uevents, 0 while they only poll").register(registry);
        BuildInfo.register(registry.getPrometheusRegistry(), Version.current(), config.nodeId());
        VolumeCountGauges volumeCounts = new VolumeCountGauges(store, volumes, registry);
        ProcessMetrics processMetrics = new ProcessMetrics(host.paths(), registry);
        DoctorAtStart doctor = new DoctorAtStart(registry);
        Optional<MetricsEndpoint> metrics = Optional.empty();
        if (config.metricsAddress().isPresent()) {
            VolumePathGauges pathGauges = new VolumePathGauges(transports, store, registry);
            NodeIdentityInfo identity = new NodeIdentityInfo(host.paths(), config.nodeId(),
                    registry.getPrometheusRegistry());
            VolumeDeviceInfo volumeDevices = new VolumeDeviceInfo(store, host.blockDevices(), config.kubeletRoot(),
                    config.nodeId(), registry.getPrometheusRegistry());
            try {
                metrics = Optional.of(MetricsEndpoint.start(config.metricsAddress().get(), registry, () -> {
                    store.recheckUnreadable(); // a file repaired or removed since counts no more
                    pathGauges.refresh();
                    volumeCounts.refresh();
                    identity.refresh();
                    volumeDevices.refresh();
                }));
            } catch (IOException | RuntimeException e) {
                processMetrics.close();
                throw e;
            }
        }
        CachedHealth health = CachedHealth.start(new HealthCheck(config.stateDir()), HEALTH_CHECK_INTERVAL);
        try {
            UnixSocketServer server = UnixSocketServer.start(config.socket(), config.socketMode(),
                    config.socketGroup(),
                    List.of(new IdentityService(config.driverName(), Version.current(),
                                    IdentityService.nodePlugin(!config.topology().isEmpty()), health),
                            new NodeService(volumes, config.nodeId(), config.topology())),
                    List.of(new MetricsInterceptor(registry), new LoggingInterceptor()),
                    Stream.of(IdentityService.ANSWERED_FROM_MEMORY, NodeService.ANSWERED_FROM_MEMORY)
                            .flatMap(Set::stream).collect(Collectors.toUnmodifiableSet()));
            // Once the socket is up, off every CSI call's path: readiness and Probe never wait for it.
            doctor.start(new Doctor(host.paths(), host.commands(), KernelFeatures.real(), config.repairInterval(),
                    ToolOwner.of(System.getenv())), Optional.of(config.kubeletRoot()));
            // The loop's cost series exist with the loop off too: a dashboard then shows no passes, not no data.
            RepairLoopCost.register();
            // After start-up recovery: the loop repairs only what the records say is staged.
            Optional<PathRepairLoop> repairs = config.repairInterval().isZero() ? Optional.empty() : Optional.of(
                    new PathRepairLoop(volumes.stagedForRepair(), transports, config.repairInterval(), System::nanoTime));
            repairs.ifPresent(PathRepairLoop::start);
            return new Plugin(server, metrics, volumes, registry, deviceWaiting, health, processMetrics, doctor,
                    repairs);
        } catch (IOException | RuntimeException e) {
            volumes.stopFencing();
            health.close();
            metrics.ifPresent(MetricsEndpoint::close);
            processMetrics.close();
            Metrics.removeRegistry(registry);
            throw e;
        }
    }

    public UnixSocketServer server() {
        return server;
    }

    public Optional<MetricsEndpoint> metrics() {
        return metrics;
    }

    public NodeVolumes volumes() {
        return volumes;
    }

    /**
     * Waits at most {@code timeout} for the doctor's checks run at start to end, so that their series are in a
     * scrape (tests); true when they have.
     */
    public boolean awaitDoctorAtStart(Duration timeout) throws InterruptedException {
        return doctor.awaitDone(timeout.toMillis());
    }

    public PrometheusMeterRegistry registry() {
        return registry;
    }

    public void shutdown(Duration grace) {
        repairs.ifPresent(PathRepairLoop::close);
        doctor.close();
        server.shutdown(grace);
        volumes.stopFencing();
        metrics.ifPresent(MetricsEndpoint::close);
        processMetrics.close();
        Metrics.removeRegistry(registry);
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
