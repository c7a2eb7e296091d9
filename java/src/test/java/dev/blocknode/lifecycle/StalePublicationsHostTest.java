package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.logging.LogCapture;
import dev.blocknode.metrics.RetiredPublications;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.CrashScenario;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import dev.blocknode.testing.PluginProcess;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;

import static dev.blocknode.testing.CsiRequests.block;
import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The bug kubelet met (kubernetes/kubernetes#85476): a raw block pod deleted while the driver was unregistered,
 * kubelet restarted twice and forgot the publication; its pod directory is gone, the device is still bound at
 * plugins/kubernetes.io/csi/volumeDevices/publish/PV/POD_UID, and every NodeUnstageVolume was refused for ever.
 * Now unstage (and start-up) retires such a publication as NodeUnpublishVolume would; a publication whose pod is
 * there, or whose target holds another device, still refuses the unstage and is left alone.
 *
 * <p>A filesystem publication cannot end up so: its target lies inside pods/POD_UID, which kubelet cannot remove
 * while it is mounted (EBUSY), so only its refusal while the pod is there is tested here.
 */
@Tag("host")
class StalePublicationsHostTest {

    private static final long SIZE = 32L << 20;
    private static final String PV = "pv-v6";
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void unstageRetiresTheBlockPublicationsOfDeletedPodsAndLeavesNothing() throws Exception {
        try (PluginHarness plugin = PluginHarness.start(); LogCapture log = LogCapture.installed()) {
            var node = plugin.client().node();
            LoopDevice loop = plugin.newLoopDevice("blk", SIZE);
            Path staging = plugin.stagingPath(PV);
            node.nodeStageVolume(stage(PV, loop.device(), staging, block()));
            Path writable = publishedForAPod(plugin, "0b6c3f1e-5d2a-4f8e-9c71-2a4e6b8d0f13", staging, false);
            Path readOnly = publishedForAPod(plugin, "7e9a1c4b-3f6d-4b2a-8e50-9d1c3a7f5b26", staging, true);
            assertEquals(1, HostAssertions.loopDevicesBackedUnder(loop.device()).size(), "the read-only view");
            Files.delete(podDirectory(plugin, "0b6c3f1e-5d2a-4f8e-9c71-2a4e6b8d0f13"));
            Files.delete(podDirectory(plugin, "7e9a1c4b-3f6d-4b2a-8e50-9d1c3a7f5b26"));

            node.nodeUnstageVolume(unstage(PV, staging));

            assertEquals(List.of(), HostAssertions.mountsUnder(plugin.kubeletRoot()));
            assertFalse(Files.exists(writable), "the target is removed, as unpublish removes it");
            assertFalse(Files.exists(readOnly));
            assertEquals(List.of(), HostAssertions.loopDevicesBackedUnder(loop.device()), "the view is released");
            assertEquals(2.0, retired(plugin));
            assertTrue(plugin.plugin().registry().scrape().contains(RetiredPublications.NAME + "_total 2.0"));
            for (Path target : List.of(writable, readOnly)) {
                assertTrue(log.written().stream().anyMatch(w -> w.level() == Level.WARNING
                        && w.text().contains("retired publication " + target + " of volume " + PV + " without"
                        + " NodeUnpublishVolume: its pod " + target.getFileName() + " no longer exists on this node")),
                        "no warning for " + target);
            }
        }
    }

    @Test
    void publicationsWhosePodsAreThereStillRefuseTheUnstage() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            var node = plugin.client().node();
            LoopDevice blockLoop = plugin.newLoopDevice("blk", SIZE);
            LoopDevice fsLoop = plugin.newLoopDevice("fs", SIZE);
            Path blockStaging = plugin.stagingPath(PV);
            Path fsStaging = plugin.stagingPath("pv-fs");
            node.nodeStageVolume(stage(PV, blockLoop.device(), blockStaging, block()));
            node.nodeStageVolume(stage("pv-fs", fsLoop.device(), fsStaging, mount("ext4")));
            Files.createDirectories(podDirectory(plugin, "pod-a"));
            Path blockTarget = blockTarget(plugin, "pod-a");
            Path fsTarget = plugin.targetPath("pod-a", "pv-fs");
            node.nodePublishVolume(publish(PV, blockStaging, blockTarget, block(), false));
            node.nodePublishVolume(publish("pv-fs", fsStaging, fsTarget, mount("ext4"), false));

            assertRefusedAsStillPublished(node, PV, blockStaging, blockTarget);
            assertRefusedAsStillPublished(node, "pv-fs", fsStaging, fsTarget);
            assertEquals(0.0, retired(plugin));

            node.nodeUnpublishVolume(unpublish(PV, blockTarget));
            node.nodeUnpublishVolume(unpublish("pv-fs", fsTarget));
            node.nodeUnstageVolume(unstage(PV, blockStaging));
            node.nodeUnstageVolume(unstage("pv-fs", fsStaging));
        }
    }

    @Test
    void aDeletedPodsTargetHoldingAnotherDeviceIsLeftAloneAndStillRefuses() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            var node = plugin.client().node();
            LoopDevice loop = plugin.newLoopDevice("blk", SIZE);
            LoopDevice stranger = plugin.newLoopDevice("stranger", SIZE);
            Path staging = plugin.stagingPath(PV);
            node.nodeStageVolume(stage(PV, loop.device(), staging, block()));
            Path target = publishedForAPod(plugin, "pod-gone", staging, false);
            // Something else now sits at the target: not this volume's to take down, whoever's pod it was.
            plugin.host().mounter().unmount(target);
            plugin.host().mounter().bind(stranger.device(), target, MountOptions.NONE);
            Files.delete(podDirectory(plugin, "pod-gone"));

            assertRefusedAsStillPublished(node, PV, staging, target);
            assertEquals(plugin.host().mounter().stat(stranger.device()).rdev(),
                    plugin.host().mounter().stat(target).rdev(), "the stranger's bind is still there");
            assertEquals(0.0, retired(plugin));

            plugin.host().mounter().unmount(target);
            node.nodeUnstageVolume(unstage(PV, staging));
        }
    }

    /**
     * Kubelet deleted the pod while the plugin was down: the restarted plugin retires the publication before it
     * serves, and leaves the volume staged (kubelet may still want it) and a live pod's publication as it is.
     */
    @Test
    void aRestartedPluginRetiresADeletedPodsPublicationAndKeepsTheVolumeStaged() throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            Path kubelet = scenario.dir().resolve("kubelet");
            Path stale = kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/publish/" + PV + "/pod-gone");
            Path live = kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/publish/" + PV + "/pod-live");
            Files.createDirectories(kubelet.resolve("pods/pod-gone"));
            Files.createDirectories(kubelet.resolve("pods/pod-live"));
            try (PluginProcess first = PluginProcess.start(scenario.dir(), Map.of())) {
                var node = first.client().node();
                node.nodeStageVolume(stage(PV, scenario.blockDevice(), scenario.blockStaging(), block()));
                node.nodePublishVolume(publish(PV, scenario.blockStaging(), stale, block(), false));
                node.nodePublishVolume(publish(PV, scenario.blockStaging(), live, block(), false));
            }
            Files.delete(kubelet.resolve("pods/pod-gone"));

            try (PluginProcess restarted = PluginProcess.start(scenario.dir(), Map.of())) {
                restarted.awaitLine(line -> line.contains("retired publication " + stale + " of volume " + PV), WAIT);
                assertEquals(List.of(live), HostAssertions.mountsUnder(kubelet));
                assertFalse(Files.exists(stale));
                StagingRecord record = new RecordStore(scenario.dir().resolve("state")).load(PV).orElseThrow();
                assertEquals(StagePhase.STAGED, record.getPhase(), "never unstaged at start");
                assertEquals(List.of(live.toString()), List.copyOf(record.getPublicationsMap().keySet()));

                var node = restarted.client().node();
                node.nodeUnpublishVolume(unpublish(PV, live));
                node.nodeUnstageVolume(unstage(PV, scenario.blockStaging()));
            }
            HostAssertions.assertNoMountsUnder(scenario.dir());
        }
    }

    /** Publishes the staged volume for a pod whose directory exists, as kubelet does. */
    private static Path publishedForAPod(PluginHarness plugin, String pod, Path staging, boolean readOnly)
            throws Exception {
        var node = plugin.client().node();
        Files.createDirectories(podDirectory(plugin, pod));
        Path target = blockTarget(plugin, pod);
        node.nodePublishVolume(publish(PV, staging, target, block(), readOnly));
        return target;
    }

    private static void assertRefusedAsStillPublished(NodeGrpc.NodeBlockingStub node, String volume,
                                                      Path staging, Path target) throws Exception {
        StatusRuntimeException refused = assertThrows(StatusRuntimeException.class,
                () -> node.nodeUnstageVolume(unstage(volume, staging)));
        assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode());
        assertEquals("volume " + volume + " is still published at [" + target + "]; unpublish it first",
                refused.getStatus().getDescription());
        assertTrue(HostAssertions.mountsUnder(target).contains(target), "the publication was taken down");
    }

    private static Path podDirectory(PluginHarness plugin, String pod) {
        return plugin.kubeletRoot().resolve("pods").resolve(pod);
    }

    private static Path blockTarget(PluginHarness plugin, String pod) {
        return plugin.kubeletRoot().resolve("plugins/kubernetes.io/csi/volumeDevices/publish").resolve(PV)
                .resolve(pod);
    }

    private static double retired(PluginHarness plugin) {
        return plugin.plugin().registry().get(RetiredPublications.NAME).counter().count();
    }
}
