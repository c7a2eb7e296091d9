package dev.blocknode.testing;

import dev.blocknode.Plugin;
import dev.blocknode.config.PluginConfig;
import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.logging.LogFormat;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.os.natives.NativeLibrary;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A real plugin on a real socket, with its kubelet root, state dir and loop devices under one temp dir.
 * close() tears down whatever a failed test left (so the next test starts clean), then asserts that the
 * test itself had left nothing: a test that leaks fails even when its own assertions passed.
 */
public final class PluginHarness implements AutoCloseable {

    public static final String NODE_ID = "test-node";
    public static final String DRIVER = "block.csi.blocknode.dev";

    private final Path dir;
    private final Path kubeletRoot;
    private final Plugin plugin;
    private final CsiClient client;
    private final Host host;
    private final List<LoopDevice> loops = new ArrayList<>();
    /** The fixture's own mounts (a shared kubelet root and its peer), undone after the plugin stops. */
    private final List<Path> fixtureMounts = new ArrayList<>();

    private PluginHarness(Path dir, Host host) throws IOException {
        this(dir, host, Optional.empty(), false);
    }

    private PluginHarness(Path dir, Host host, Optional<String> metricsAddress, boolean sharedKubeletRoot)
            throws IOException {
        this(dir, host, metricsAddress, sharedKubeletRoot, 0, Map.of());
    }

    private PluginHarness(Path dir, Host host, Optional<String> metricsAddress, boolean sharedKubeletRoot,
                          long maxVolumesPerNode, Map<String, String> topology) throws IOException {
        NativeLibrary.load();
        this.dir = dir;
        this.host = host;
        this.kubeletRoot = dir.resolve("kubelet");
        if (sharedKubeletRoot) {
            shareKubeletRoot();
        }
        PluginConfig config = PluginConfig.builder().socket(dir.resolve("csi.sock")).nodeId(NODE_ID).driverName(DRIVER)
                .kubeletRoot(kubeletRoot).stateDir(dir.resolve("state")).metricsAddress(metricsAddress)
                .logFormat(LogFormat.TEXT).shutdownGrace(Duration.ofSeconds(5)).maxVolumesPerNode(maxVolumesPerNode)
                .topology(topology).repairInterval(Duration.ZERO).build();
        this.plugin = Plugin.start(config, host);
        this.client = new CsiClient(config.socket());
    }

    public static PluginHarness start() throws IOException {
        return start(Host.real());
    }

    public static PluginHarness start(Host host) throws IOException {
        return new PluginHarness(Files.createTempDirectory(Path.of("/tmp"), "bn-host-"), host);
    }

    /** With {@code --max-volumes-per-node} and {@code --topology} as given. */
    public static PluginHarness startWith(long maxVolumesPerNode, Map<String, String> topology) throws IOException {
        return new PluginHarness(Files.createTempDirectory(Path.of("/tmp"), "bn-host-"), Host.real(),
                Optional.empty(), false, maxVolumesPerNode, topology);
    }

    /** With the Prometheus endpoint on a free loopback port (see plugin().metrics()). */
    public static PluginHarness startWithMetrics() throws IOException {
        return startWithMetrics(Host.real());
    }

    /** With the Prometheus endpoint, over {@code host}. */
    public static PluginHarness startWithMetrics(Host host) throws IOException {
        return new PluginHarness(Files.createTempDirectory(Path.of("/tmp"), "bn-host-"), host,
                Optional.of("127.0.0.1:0"), false);
    }

    /**
     * With the kubelet root a shared mount (a tmpfs, {@code mount --make-shared}) that has a peer at
     * {@link #hostView()}: what the DaemonSet's Bidirectional kubelet-dir is to the host's /var/lib/kubelet.
     * Every mount the plugin makes under the root appears under the peer too, as the kernel propagates it.
     */
    public static PluginHarness startOnSharedKubeletRoot() throws IOException {
        return new PluginHarness(Files.createTempDirectory(Path.of("/tmp"), "bn-host-"), Host.real(),
                Optional.empty(), true);
    }

    /** The peer of a shared kubelet root ({@link #startOnSharedKubeletRoot()}): the root as the host sees it. */
    public Path hostView() {
        return dir.resolve("host-view");
    }

    /** {@code path} under the kubelet root, as the host's peer ({@link #hostView()}) shows it. */
    public Path asTheHostSeesIt(Path path) {
        return hostView().resolve(kubeletRoot.relativize(path));
    }

    private void shareKubeletRoot() throws IOException {
        Files.createDirectories(kubeletRoot);
        Files.createDirectories(hostView());
        LinuxNative.mount("kubelet-root", kubeletRoot.toString(), "tmpfs", 0, "size=16m,mode=0750");
        fixtureMounts.add(kubeletRoot);
        try {
            LinuxNative.mount(null, kubeletRoot.toString(), null, LinuxNative.MS_SHARED, null);
            LinuxNative.mount(kubeletRoot.toString(), hostView().toString(), null, LinuxNative.MS_BIND, null);
            fixtureMounts.addFirst(hostView());
        } catch (IOException e) {
            LinuxNative.umount2(kubeletRoot.toString(), LinuxNative.MNT_DETACH);
            throw e;
        }
    }

    public CsiClient client() {
        return client;
    }

    public Plugin plugin() {
        return plugin;
    }

    public Host host() {
        return host;
    }

    public Path kubeletRoot() {
        return kubeletRoot;
    }

    public Path stateDir() {
        return dir.resolve("state");
    }

    public LoopDevice newLoopDevice(String name, long sizeBytes) throws IOException {
        LoopDevice loop = LoopDevice.create(dir, name, sizeBytes);
        loops.add(loop);
        return loop;
    }

    /** kubelet's staging path for a volume: plugins/kubernetes.io/csi/DRIVER/HASH/globalmount. */
    public Path stagingPath(String volumeId) throws IOException {
        Path path = kubeletRoot.resolve("plugins/kubernetes.io/csi").resolve(DRIVER).resolve(volumeId)
                .resolve("globalmount");
        Files.createDirectories(path);
        return path;
    }

    /** kubelet's publish path for a pod: its parent exists, the leaf is the plugin's to create. */
    public Path targetPath(String podUid, String volumeId) throws IOException {
        Path path = kubeletRoot.resolve("pods").resolve(podUid).resolve("volumes/kubernetes.io~csi")
                .resolve(volumeId).resolve("mount");
        Files.createDirectories(path.getParent());
        return path;
    }

    @Override
    public void close() throws IOException {
        List<Path> leftMounts = HostCleanup.unmountAllBeneath(dir, fixtureMounts, host.mounter());
        client.close();
        plugin.shutdown(Duration.ofSeconds(5));
        for (Path mount : fixtureMounts) {
            try {
                LinuxNative.umount2(mount.toString(), 0);
            } catch (NativeIOException busy) { // the plugin's descriptor of the kubelet root may hold it yet
                LinuxNative.umount2(mount.toString(), LinuxNative.MNT_DETACH);
            }
        }
        HostCleanup.closeLoopsAndDelete(loops, dir);
        if (!leftMounts.isEmpty()) {
            throw new AssertionError("the test left mounts behind (now removed): " + leftMounts);
        }
        HostAssertions.assertNoLoopDevicesUnder(dir);
    }
}
