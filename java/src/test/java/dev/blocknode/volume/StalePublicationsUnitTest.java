package dev.blocknode.volume;

import dev.blocknode.logging.LogCapture;
import dev.blocknode.metrics.RetiredPublications;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.volume.request.Requests;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.logging.Level;

import static dev.blocknode.volume.LifecycleFixture.OTHER_VOLUME;
import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.block;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A publication kubelet forgot (kubernetes/kubernetes#85476) whose pod is gone is retired by NodeUnstageVolume
 * and at start, exactly as NodeUnpublishVolume would take it down; one whose pod is there, one outside kubelet's
 * layout and one holding a mount that is not the volume's keep refusing the unstage, left as they are.
 */
class StalePublicationsUnitTest {

    private static final String GONE_POD = "6f1c2a9e-0d7b-4c1e-9a55-3b2f0e8d1c47";
    private static final String LIVE_POD = "b3e0d5a1-7c2f-4e8b-8d19-5a6c4f2e9b03";

    @TempDir
    Path temp;

    private LifecycleFixture node;
    private SimpleMeterRegistry registry;
    private LogCapture log;

    @BeforeEach
    void stageABlockVolume() throws IOException, VolumeException {
        registry = new SimpleMeterRegistry();
        Metrics.addRegistry(registry);
        node = new LifecycleFixture(temp);
        node.stage(VOLUME, node.device, block());
        node.machine.directories(node.podDirectory(LIVE_POD));
        node.machine.clearActions();
        log = LogCapture.installed();
    }

    @AfterEach
    void clean() {
        log.close();
        Metrics.removeRegistry(registry);
        node.assertClean();
    }

    @Test
    void unstageRetiresABlockPublicationWhosePodIsGoneThenUnstages() throws Exception {
        Path target = publishedForAGonePod();

        unstage();

        assertEquals(List.of("unmount " + target, "remove " + target), node.machine.actions(),
                "taken down as NodeUnpublishVolume takes it down, nothing else");
        assertTrue(node.machine.mountPoints().isEmpty());
        assertTrue(node.record(VOLUME).isEmpty(), "unstaged");
        assertEquals(1.0, retired());
        assertTrue(log.written().stream().anyMatch(w -> w.level() == Level.WARNING
                        && w.text().contains("retired publication " + target + " of volume " + VOLUME)
                        && w.text().contains("its pod " + GONE_POD + " no longer exists on this node")),
                log.written().toString());
    }

    @Test
    void aPublicationWhosePodIsThereStillRefusesTheUnstage() throws Exception {
        Path target = node.blockTarget(LIVE_POD, VOLUME);
        node.publish(VOLUME, target, block(), false);
        node.machine.clearActions();

        assertUnstageRefusedAsBefore(target);

        assertEquals(List.of(), node.machine.actions());
        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
        cleanUp(target);
    }

    @Test
    void aTargetOutsideKubeletsLayoutIsNeverRetired() throws Exception {
        Path target = node.root.resolve("elsewhere/" + GONE_POD);
        node.publish(VOLUME, target, block(), false);

        assertUnstageRefusedAsBefore(target);

        cleanUp(target);
    }

    @Test
    void withoutKubeletsPodsDirectoryNoPodIsTakenToBeGone() throws Exception {
        Path target = publishedForAGonePod();
        node.machine.removeTree(node.root.resolve("pods"));

        assertUnstageRefusedAsBefore(target);

        cleanUp(target);
    }

    @Test
    void aSymlinkInPlaceOfThePodsDirectoryIsDoubtNotAbsence() throws Exception {
        Path target = publishedForAGonePod();
        node.machine.symlink(node.root.resolve("pods"));

        assertUnstageRefusedAsBefore(target);

        cleanUp(target);
    }

    @Test
    void aStaleTargetHoldingAnotherDeviceIsLeftAloneAndStillRefuses() throws Exception {
        Path target = publishedForAGonePod();
        node.machine.mounter().bind(node.otherDevice.device(), target, MountOptions.NONE); // over the volume's own bind
        node.machine.clearActions();

        assertUnstageRefusedAsBefore(target);

        assertEquals(List.of(), node.machine.actions(), "nothing unmounted: the top mount is not the volume's");
        assertEquals(node.otherDevice.number(), node.machine.mountedDevice(target).orElseThrow());
        assertTrue(log.written().stream().anyMatch(w -> w.level() == Level.WARNING
                && w.text().contains("belongs to pod " + GONE_POD + ", which no longer exists on this node, but was"
                + " not retired")), log.written().toString());
        node.machine.mounter().unmount(target);
        node.unpublish(VOLUME, target);
        unstage();
    }

    @Test
    void aFilesystemPublicationOfALivePodStillRefusesTheUnstage() throws Exception {
        node.staged(OTHER_VOLUME, node.otherDevice);
        Path target = node.target(LIVE_POD, OTHER_VOLUME);
        node.publish(OTHER_VOLUME, target, filesystem(), false);

        VolumeException refused = assertThrows(VolumeException.class, () -> node.volumes.unstage(
                new Requests.Unstage(OTHER_VOLUME, node.staging(OTHER_VOLUME).toString())));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(node.machine.isMounted(target));
        node.unpublish(OTHER_VOLUME, target);
        node.volumes.unstage(new Requests.Unstage(OTHER_VOLUME, node.staging(OTHER_VOLUME).toString()));
        cleanUp(null);
    }

    @Test
    void atStartOnlyTheGonePodsPublicationIsRetiredAndTheVolumeStaysStaged() throws Exception {
        Path stale = publishedForAGonePod();
        Path live = node.blockTarget(LIVE_POD, VOLUME);
        node.publish(VOLUME, live, block(), false);
        node.machine.clearActions();

        new StartupRecovery(node.volumes).retireStalePublications(List.of(node.record(VOLUME).orElseThrow()));

        assertEquals(List.of("unmount " + stale, "remove " + stale), node.machine.actions());
        assertEquals(StagePhase.STAGED, node.phase(VOLUME), "never unstaged at start");
        assertEquals(List.of(live.toString()),
                List.copyOf(node.record(VOLUME).orElseThrow().getPublicationsMap().keySet()));
        assertTrue(node.machine.isMounted(live));
        assertEquals(1.0, retired());
        cleanUp(live);
    }

    /** Published for a pod whose directory kubelet has removed since, keeping the bind: the bug's state. */
    private Path publishedForAGonePod() throws VolumeException {
        node.machine.directories(node.podDirectory(GONE_POD));
        Path target = node.blockTarget(GONE_POD, VOLUME);
        node.publish(VOLUME, target, block(), false);
        node.machine.removeTree(node.podDirectory(GONE_POD));
        node.machine.clearActions();
        return target;
    }

    /** The unstage is refused as it was before retirement existed, the target stays mounted, nothing is counted. */
    private void assertUnstageRefusedAsBefore(Path target) {
        VolumeException refused = assertThrows(VolumeException.class, this::unstage);
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertEquals("volume " + VOLUME + " is still published at [" + target + "]; unpublish it first",
                refused.getMessage());
        assertTrue(node.machine.isMounted(target));
        assertEquals(0.0, retired());
    }

    private void unstage() throws VolumeException {
        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));
    }

    /** Unpublishes {@code target} (when given) and unstages the volume, as kubelet would: the test ends clean. */
    private void cleanUp(Path target) throws VolumeException {
        if (target != null) {
            node.unpublish(VOLUME, target);
        }
        unstage();
        assertTrue(node.machine.mountPoints().isEmpty());
        assertFalse(node.record(VOLUME).isPresent());
    }

    private double retired() {
        return registry.find(RetiredPublications.NAME).counter() == null ? 0.0
                : registry.find(RetiredPublications.NAME).counter().count();
    }
}
