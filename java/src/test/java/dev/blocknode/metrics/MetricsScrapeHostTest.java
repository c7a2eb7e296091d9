package dev.blocknode.metrics;

import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.host.Host;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Scrapes /metrics over HTTP during a lifecycle: RPC latencies by method and code, phases, in-flight. */
@Tag("host")
class MetricsScrapeHostTest {

    /** GET /metrics of a plugin started with metrics: 200, text/plain, the body. */
    static String scrape(PluginHarness plugin) throws Exception {
        URI uri = URI.create(plugin.plugin().metrics().orElseThrow().url());
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(uri).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, response.statusCode());
            assertTrue(response.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));
            return response.body();
        }
    }

    /**
     * One ext4 volume staged, published, asked for its stats, refused an unstage (no staging path: an error
     * code), unpublished and unstaged: every RPC series and phase a lifecycle makes.
     */
    static void lifecycle(PluginHarness plugin) throws Exception {
        LoopDevice loop = plugin.newLoopDevice("m", 64L << 20);
        Path staging = plugin.stagingPath("m");
        Path target = plugin.targetPath("pod", "m");
        plugin.client().node().nodeStageVolume(stage("m", loop.device(), staging, mount("ext4")));
        plugin.client().node().nodePublishVolume(publish("m", staging, target, mount("ext4"), false));
        plugin.client().node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId("m")
                .setVolumePath(target.toString()).build());
        assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                .nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId("m").build()));
        plugin.client().node().nodeUnpublishVolume(unpublish("m", target));
        plugin.client().node().nodeUnstageVolume(unstage("m", staging));
    }

    /** The value of the first sample of {@code name} whose labels include every given label. */
    private static double sample(String text, String name, String... labels) {
        for (String line : text.lines().toList()) {
            if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) {
                continue;
            }
            boolean all = true;
            for (String label : labels) {
                all &= line.contains(label);
            }
            if (all) {
                Matcher value = Pattern.compile(" ([0-9.eE+-]+)$").matcher(line);
                assertTrue(value.find(), line);
                return Double.parseDouble(value.group(1));
            }
        }
        throw new AssertionError("no sample " + name + " with " + String.join(",", labels) + " in:\n" + text);
    }

    @Test
    void aLifecycleShowsUpInTheSeries() throws Exception {
        try (PluginHarness plugin = PluginHarness.startWithMetrics()) {
            lifecycle(plugin);

            String text = scrape(plugin);
            assertEquals(1.0, sample(text, "blocknode_rpc_seconds_count", "method=\"NodeStageVolume\"", "code=\"OK\""));
            assertEquals(1.0, sample(text, "blocknode_rpc_seconds_count", "method=\"NodePublishVolume\"",
                    "code=\"OK\""));
            assertEquals(1.0, sample(text, "blocknode_rpc_seconds_count", "method=\"NodeUnstageVolume\"",
                    "code=\"INVALID_ARGUMENT\""));
            assertTrue(sample(text, "blocknode_rpc_seconds_bucket", "method=\"NodeStageVolume\"", "le=\"+Inf\"") >= 1);
            assertEquals(0.0, sample(text, "blocknode_rpc_in_flight"));
            assertTrue(sample(text, "blocknode_phase_seconds_count", "phase=\"mkfs\"", "outcome=\"ok\"") >= 1);
            assertTrue(sample(text, "blocknode_phase_seconds_count", "phase=\"mount\"", "outcome=\"ok\"") >= 1);
            assertTrue(sample(text, "blocknode_phase_seconds_count", "phase=\"flush\"", "outcome=\"ok\"") >= 1);
            assertEquals(0.0, sample(text, "blocknode_startup_stale_records"));
            assertEquals(0.0, sample(text, "blocknode_unreadable_staging_records"));
            assertEquals(1.0, sample(text, "blocknode_rpc_errors_total", "method=\"NodeUnstageVolume\"",
                    "reason=\"invalid_argument\""));
            assertEquals(1.0, sample(text, "blocknode_device_waits_event_driven"), "the uevent socket opened");
            assertTrue(text.contains("# TYPE blocknode_rpc_seconds histogram"), "latency is a histogram");
            assertEquals(1.0, sample(text, "blocknode_build_info", "version=\"" + dev.blocknode.Version.current()));
            assertEquals(0.0, sample(text, "blocknode_volumes", "phase=\"staged\""), "unstaged again");
            assertEquals(0.0, sample(text, "blocknode_fenced_volumes", "state=\"fenced_out\""));
            assertTrue(sample(text, "process_resident_memory_bytes") > 1 << 20, "the test JVM's RSS");
        }
    }

    /**
     * The real plugin's identity series follow the node's files at each scrape: /etc redirected (HostPaths) to a
     * temporary tree, /sys, /dev and /proc the machine's own.
     */
    @Test
    void theNodesSanIdentityIsReadAtEachScrape(@TempDir Path etc) throws Exception {
        Host real = Host.real();
        Host host = new Host(new HostPaths(real.paths().sys(), real.paths().dev(), real.paths().proc(), etc),
                real.commands(), real.mounter(), real.blockDevices(), real.files(), real.scsi());
        Path initiator = Files.createDirectories(etc.resolve("iscsi")).resolve("initiatorname.iscsi");
        Files.writeString(initiator, "InitiatorName=iqn.2026-11.dev.blocknode:first\n");
        try (PluginHarness plugin = PluginHarness.startWithMetrics(host)) {
            String text = scrape(plugin);
            assertEquals(1.0, sample(text, "blocknode_node_iscsi_initiator_info",
                    "iqn=\"iqn.2026-11.dev.blocknode:first\"", "node=\"" + PluginHarness.NODE_ID + "\""));
            assertFalse(text.contains("blocknode_node_nvme_host_info{"), "no hostnqn file: no row");

            Files.writeString(initiator, "InitiatorName=iqn.2026-11.dev.blocknode:second\n");
            Files.createDirectories(etc.resolve("nvme"));
            Files.writeString(etc.resolve("nvme/hostnqn"), "nqn.2014-08.org.nvmexpress:uuid:1b4e28ba-2fa1\n");
            text = scrape(plugin);
            assertEquals(1.0, sample(text, "blocknode_node_iscsi_initiator_info",
                    "iqn=\"iqn.2026-11.dev.blocknode:second\""));
            assertFalse(text.contains("iqn.2026-11.dev.blocknode:first"), "the old name is gone");
            assertEquals(1.0, sample(text, "blocknode_node_nvme_host_info",
                    "hostnqn=\"nqn.2014-08.org.nvmexpress:uuid:1b4e28ba-2fa1\""));
        }
    }

    /**
     * The real plugin's volume-to-device series: a staged and published loop volume is its loop device by kernel
     * name, with the PV's name from kubelet's publication path; unstaged, its row is gone.
     */
    @Test
    void aStagedVolumesDeviceIsInTheDeviceInfoUntilItIsUnstaged() throws Exception {
        try (PluginHarness plugin = PluginHarness.startWithMetrics()) {
            LoopDevice loop = plugin.newLoopDevice("d", 64L << 20);
            Path staging = plugin.stagingPath("d");
            Path target = plugin.targetPath("pod-d", "pv-of-d");
            plugin.client().node().nodeStageVolume(stage("d", loop.device(), staging, mount("ext4")));
            plugin.client().node().nodePublishVolume(publish("d", staging, target, mount("ext4"), false));
            String device = "device=\"" + loop.device().getFileName() + "\"";
            assertEquals(1.0, sample(scrape(plugin), "blocknode_volume_device_info", "volume_id=\"d\"",
                    "pv=\"pv-of-d\"", "role=\"volume\"", device, "node=\"" + PluginHarness.NODE_ID + "\""));

            plugin.client().node().nodeUnpublishVolume(unpublish("d", target));
            plugin.client().node().nodeUnstageVolume(unstage("d", staging));
            assertFalse(scrape(plugin).contains("blocknode_volume_device_info{"), "unstaged: no row");
        }
    }

    @Test
    void aStagedVolumeIsCountedInItsPhase() throws Exception {
        try (PluginHarness plugin = PluginHarness.startWithMetrics()) {
            LoopDevice loop = plugin.newLoopDevice("p", 64L << 20);
            Path staging = plugin.stagingPath("p");
            plugin.client().node().nodeStageVolume(stage("p", loop.device(), staging, mount("ext4")));
            assertEquals(1.0, sample(scrape(plugin), "blocknode_volumes", "phase=\"staged\""));
            plugin.client().node().nodeUnstageVolume(unstage("p", staging));
            assertEquals(0.0, sample(scrape(plugin), "blocknode_volumes", "phase=\"staged\""));
        }
    }
}
