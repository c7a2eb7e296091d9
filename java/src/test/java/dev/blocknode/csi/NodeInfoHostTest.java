package dev.blocknode.csi;

import dev.blocknode.csi.v1.GetPluginCapabilitiesRequest;
import dev.blocknode.csi.v1.NodeGetInfoRequest;
import dev.blocknode.csi.v1.NodeGetInfoResponse;
import dev.blocknode.csi.v1.PluginCapability;
import dev.blocknode.os.HostPaths;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import dev.blocknode.transport.san.MultipathMapCount;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodeGetInfo and GetPluginCapabilities through the real plugin on its socket: with default flags exactly what
 * they were before topology and the computed limit (what csi-sanity and the kube tier see), and with
 * {@code --topology} and {@code --max-volumes-per-node} the segments, the capability the spec asks for with them,
 * the computed count, and a stage beyond it refused as RESOURCE_EXHAUSTED with nothing left.
 */
@Tag("host")
class NodeInfoHostTest {

    private static final long SIZE = 64L << 20;
    private static final PluginCapability ACCESSIBILITY = PluginCapability.newBuilder()
            .setService(PluginCapability.Service.newBuilder()
                    .setType(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS)).build();

    @Test
    void defaultFlagsReportNoTopologyAndNoLimit() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            NodeGetInfoResponse info = plugin.client().node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance());
            assertEquals(NodeGetInfoResponse.newBuilder().setNodeId(PluginHarness.NODE_ID).build(), info);
            assertFalse(plugin.client().identity().getPluginCapabilities(GetPluginCapabilitiesRequest
                    .getDefaultInstance()).getCapabilitiesList().contains(ACCESSIBILITY));
        }
    }

    @Test
    void topologyAndTheLimitAreReportedAndAStageBeyondItLeavesNothing() throws Exception {
        Map<String, String> topology = Map.of("topology.blocknode.dev/fabric", "fab-a", "site", "s1");
        // This machine's own multipath maps, if any, are outside blocknode and come off the cap.
        int outside = new MultipathMapCount(HostPaths.real()).countNotAmong(Set.of());
        long cap = 1 + outside;
        try (PluginHarness plugin = PluginHarness.startWith(cap, topology)) {
            NodeGetInfoResponse info = plugin.client().node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance());
            assertEquals(topology, info.getAccessibleTopology().getSegmentsMap());
            assertEquals(1, info.getMaxVolumesPerNode());
            List<PluginCapability> capabilities = plugin.client().identity()
                    .getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();
            assertTrue(capabilities.contains(ACCESSIBILITY), capabilities.toString());

            LoopDevice first = plugin.newLoopDevice("first", SIZE);
            LoopDevice second = plugin.newLoopDevice("second", SIZE);
            Path firstStaging = plugin.stagingPath("first");
            plugin.client().node().nodeStageVolume(stage("first", first.device(), firstStaging, mount("ext4")));

            Path secondStaging = plugin.kubeletRoot().resolve("plugins/kubernetes.io/csi")
                    .resolve(PluginHarness.DRIVER).resolve("second/globalmount");
            Files.createDirectories(secondStaging.getParent());
            StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeStageVolume(stage("second", second.device(), secondStaging, mount("ext4"))));
            assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.getStatus().getCode());
            String message = refused.getStatus().getDescription();
            assertTrue(message.contains("volume second is not staged") && message.contains("1 blocknode volume(s)")
                    && message.contains("--max-volumes-per-node " + cap), message);
            assertEquals(1, records(plugin), "only the first volume's record");
            assertFalse(Files.exists(secondStaging), "no staging directory made");
            assertTrue(isBlank(second), "the refused volume's device is left as it was: not formatted");

            // The count is the total kubelet's scheduler counts against: blocknode's own volume is not taken off.
            assertEquals(1, plugin.client().node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance())
                    .getMaxVolumesPerNode());
            plugin.client().node().nodeUnstageVolume(unstage("first", firstStaging));
            plugin.client().node().nodeStageVolume(stage("second", second.device(), secondStaging, mount("ext4")));
            plugin.client().node().nodeUnstageVolume(unstage("second", secondStaging));
            assertEquals(0, records(plugin));
        }
    }

    private static boolean isBlank(LoopDevice loop) throws Exception {
        try (var in = Files.newInputStream(loop.device())) {
            byte[] head = in.readNBytes(1 << 20);
            for (byte b : head) {
                if (b != 0) {
                    return false;
                }
            }
            return head.length == 1 << 20;
        }
    }

    private static long records(PluginHarness plugin) throws Exception {
        try (Stream<Path> files = Files.list(plugin.stateDir().resolve("volumes"))) {
            return files.count();
        }
    }
}
