package dev.blocknode;

import dev.blocknode.config.PluginConfig;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.doctor.CachedHealth;
import dev.blocknode.doctor.DoctorAtStart;
import dev.blocknode.metrics.MetricsEndpoint;
import dev.blocknode.metrics.ProcessMetrics;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.uevent.NetlinkUeventSource;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.DeviceWaiting;
import dev.blocknode.repair.PathRepairLoop;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.fc.FcTransport;
import dev.blocknode.transport.iscsi.IscsiTransport;
import dev.blocknode.transport.iscsi.LoginJournal;
import dev.blocknode.transport.local.LocalTransport;
import dev.blocknode.transport.nvme.NvmeTcpTransport;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.ScanJournal;
import dev.blocknode.volume.NodeVolumes;
import dev.blocknode.volume.filesystem.FilesystemType;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/** The running plugin: its parts wired together and its socket open. Used by Main and by the tests. */
public final class Plugin implements AutoCloseable {

    /** How often Probe's answer is refreshed (livenessprobe asks every few seconds; kubelet acts on 3 failures). */
    static final Duration HEALTH_CHECK_INTERVAL = Duration.ofSeconds(3);

    private final UnixSocketServer server;
    private final NodeVolumes volumes;
    private final DeviceWaiting deviceWaiting;
    private final CachedHealth health;
    private final Telemetry telemetry;
    private final Background background;

    /** What serves the plugin's series: the registry (global while the plugin runs), its endpoint, the process's. */
    record Telemetry(PrometheusMeterRegistry registry, Optional<MetricsEndpoint> endpoint, ProcessMetrics process) {
        void close() {
            endpoint.ifPresent(MetricsEndpoint::close);
            process.close();
            Metrics.removeRegistry(registry);
        }
    }

    /** The work started once the socket is up: the doctor's checks and the path repair loop. */
    record Background(DoctorAtStart doctor, Optional<PathRepairLoop> repairs) {
        void close() {
            repairs.ifPresent(PathRepairLoop::close);
            doctor.close();
        }
    }

    Plugin(UnixSocketServer server, NodeVolumes volumes, DeviceWaiting deviceWaiting, CachedHealth health,
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
            return PluginStart.start(config, host, deviceWaiting);
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
                new NvmeTcpTransport(host, waiter, fence, staged, repairInterval)));
    }

    /** What volumes run and Probe checks for on PATH: blkid, then each filesystem's tools. */
    static List<String> requiredTools() {
        return Stream.concat(Stream.of("blkid"),
                Arrays.stream(FilesystemType.values()).flatMap(type -> type.tools().stream())).toList();
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
