package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.PathReport;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.read.StorageProblem;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static dev.blocknode.volume.LifecycleFixture.OTHER_VOLUME;
import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NodeGetVolumeHealth and NodeGetStorageHealth (CSI 1.13, what kubelet 1.37 asks): each problem a staged volume
 * can have, with the kind kubelet shows (Degraded, Inaccessible) and a reason that does not change; a volume
 * whose stage failed is answered from that failure; one the node knows nothing of is NOT_FOUND. Storage health
 * sums up the SAN volumes' paths per transport.
 */
class VolumeHealthUnitTest {

    @TempDir
    Path temp;

    private LifecycleFixture node;
    private Path target;

    @BeforeEach
    void stageAndPublish() throws IOException, VolumeException {
        node = new LifecycleFixture(temp);
        target = node.stagedAndPublished();
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    private List<HealthProblem> health(String volumeId, String publishPath) throws VolumeException {
        return node.volumes.health(new Requests.Health(volumeId, publishPath, ""));
    }

    private static List<HealthProblem.Kind> kinds(List<HealthProblem> problems) {
        return problems.stream().map(HealthProblem::kind).toList();
    }

    @Test
    void aHealthyVolumeHasNoProblemWhicheverPathsAreNamed() throws Exception {
        assertEquals(List.of(), health(VOLUME, ""));
        assertEquals(List.of(), health(VOLUME, target.toString()));
        assertEquals(List.of(), node.volumes.storageHealth());
    }

    @Test
    void aVolumeWhoseRecordCannotBeReadSaysSoAndTheOthersAreAnsweredAsUsual() throws Exception {
        node.staged(OTHER_VOLUME, node.otherDevice);
        Path file = node.recordFile(OTHER_VOLUME);
        Files.write(file, new byte[] {1, 2, 3});
        NodeVolumes restarted = node.restarted();

        List<HealthProblem> problems = restarted.health(new Requests.Health(OTHER_VOLUME, "", ""));
        assertEquals(List.of(HealthProblem.Kind.RECORD_UNREADABLE), kinds(problems));
        assertEquals("RecordUnreadable", problems.getFirst().kind().reason());
        assertTrue(problems.getFirst().message().contains(file + " is corrupt"), problems.toString());
        assertEquals(List.of(), restarted.health(new Requests.Health(VOLUME, target.toString(), "")));
        assertEquals(List.of(), restarted.storageHealth());
    }

    @Test
    void aFilesystemTheKernelTurnedReadOnlyIsDegraded() throws Exception {
        node.machine.turnReadOnly(node.device.number());

        List<HealthProblem> problems = health(VOLUME, "");
        assertEquals(List.of(HealthProblem.Kind.FILESYSTEM_READ_ONLY), kinds(problems));
        assertEquals(HealthProblem.Severity.DEGRADED, problems.getFirst().kind().severity());
        assertEquals("FilesystemReadOnly", problems.getFirst().kind().reason());
        assertTrue(problems.getFirst().message().contains(node.device.device().toString()), problems.toString());
    }

    @Test
    void aDeviceThatLeftTheNodeMakesTheVolumeInaccessible() throws Exception {
        Files.delete(node.sysfs.sys().resolve("dev/block/" + node.device.number().major() + ":"
                + node.device.number().minor()));

        List<HealthProblem> problems = health(VOLUME, "");
        assertEquals(List.of(HealthProblem.Kind.DEVICE_MISSING), kinds(problems));
        assertEquals(HealthProblem.Severity.INACCESSIBLE, problems.getFirst().kind().severity());
    }

    @Test
    void aStagingMountThatIsGoneMakesTheVolumeInaccessible() throws Exception {
        node.machine.mounter().unmount(node.staging(VOLUME));

        assertEquals(List.of(HealthProblem.Kind.STAGING_MOUNT_MISSING), kinds(health(VOLUME, "")));
    }

    @Test
    void aPublicationThatIsGoneIsReportedOnlyWhenItsPathIsNamed() throws Exception {
        node.machine.mounter().unmount(target);

        assertEquals(List.of(), health(VOLUME, ""));
        assertEquals(List.of(HealthProblem.Kind.PUBLICATION_MISSING), kinds(health(VOLUME, target.toString())));
        // A path that is no publication of the volume says nothing about it.
        assertEquals(List.of(), health(VOLUME, node.target("pod-z", VOLUME).toString()));
    }

    @Test
    void aPublishPathOutsideTheKubeletRootIsRefused() {
        VolumeException refused = assertThrows(VolumeException.class, () -> health(VOLUME, "/etc/shadow"));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome(), refused.getMessage());
    }

    @Test
    void aVolumeThisNodeKnowsNothingOfIsNotFound() {
        VolumeException refused = assertThrows(VolumeException.class, () -> health("vol-unknown", ""));
        assertEquals(VolumeException.Outcome.NOT_FOUND, refused.outcome(), refused.getMessage());
    }

    @Test
    void aVolumeWhoseStageFailedIsInaccessibleWithTheFailureUntilItStages() throws Exception {
        node.transport.failNextAttach(VolumeException.precondition("LUN 4 answers with another WWID"));
        assertThrows(VolumeException.class,
                () -> node.stage(OTHER_VOLUME, node.otherDevice, LifecycleFixture.filesystem()));

        List<HealthProblem> problems = health(OTHER_VOLUME, "");
        assertEquals(List.of(HealthProblem.Kind.STAGE_FAILED), kinds(problems));
        assertTrue(problems.getFirst().message().contains("LUN 4 answers with another WWID"), problems.toString());
        assertTrue(problems.getFirst().message().contains("FAILED_PRECONDITION"), problems.toString());

        node.staged(OTHER_VOLUME, node.otherDevice);
        assertEquals(List.of(), health(OTHER_VOLUME, ""));
    }

    @Test
    void aStageRefusedForTheCallersMistakeSaysNothingAboutTheVolume() throws Exception {
        node.transport.failNextAttach(VolumeException.invalid("volume_context.lun is not a number"));
        assertThrows(VolumeException.class,
                () -> node.stage(OTHER_VOLUME, node.otherDevice, LifecycleFixture.filesystem()));
        VolumeException refused = assertThrows(VolumeException.class, () -> health(OTHER_VOLUME, ""));
        assertEquals(VolumeException.Outcome.NOT_FOUND, refused.outcome(), refused.getMessage());

        // An attach cut short by a concurrent call stays recorded for kubelet's retry: under way, not failed.
        node.transport.failNextAttach(new VolumeException(VolumeException.Outcome.ABORTED,
                "another operation on the volume is running"));
        assertThrows(VolumeException.class,
                () -> node.stage(OTHER_VOLUME, node.otherDevice, LifecycleFixture.filesystem()));
        assertEquals(List.of(), health(OTHER_VOLUME, ""));
        node.staged(OTHER_VOLUME, node.otherDevice);
    }

    @Test
    void lostPathsDegradeTheVolumeAndNoPathLeftMakesItInaccessible() throws Exception {
        String device = node.device.device().getFileName().toString();
        node.transport.paths(device, new PathReport(1, List.of("sdc is failed"),
                Optional.of("multipath map m serves on 1 path(s); sdc is failed")));
        assertEquals(List.of(HealthProblem.Kind.PATHS_FAILED), kinds(health(VOLUME, "")));

        node.transport.paths(device, new PathReport(0, List.of("sdb is failed", "sdc is failed"),
                Optional.of("multipath map m serves on 0 path(s); sdb is failed, sdc is failed")));
        List<HealthProblem> problems = health(VOLUME, "");
        assertEquals(List.of(HealthProblem.Kind.NO_PATH_SERVING), kinds(problems));
        assertEquals(HealthProblem.Severity.INACCESSIBLE, problems.getFirst().kind().severity());
    }

    /** What the repair loop's sweep left though nothing names it is a storage condition until a sweep finds none. */
    @Test
    void leftoversTheSweepKeptAreAStorageConditionUntilASweepFindsNone() throws Exception {
        node.volumes.stagedForRepair().reportKept(List.of("iSCSI session7 of iqn.x via 10.0.0.1:3260 (iface default):"
                + " no staging record names it, but it carries SCSI device(s) [3:0:0:1]; left logged in"));
        List<StorageProblem> problems = node.volumes.storageHealth();
        assertEquals(1, problems.size(), problems.toString());
        assertEquals("LeftoversKept", problems.getFirst().reason());
        assertEquals(StorageProblem.Severity.DEGRADED, problems.getFirst().severity());
        assertTrue(problems.getFirst().message().contains("session7"), problems.getFirst().message());

        node.volumes.stagedForRepair().reportKept(List.of());
        assertEquals(List.of(), node.volumes.storageHealth());
    }

    @Test
    void storageIsDegradedWhileSomeVolumesLostPathsAndUnreachableWhenNoneHasOne() throws Exception {
        node.staged(OTHER_VOLUME, node.otherDevice);
        String device = node.device.device().getFileName().toString();
        String other = node.otherDevice.device().getFileName().toString();
        node.transport.paths(other, new PathReport(2, List.of(), Optional.empty()));
        node.transport.paths(device, new PathReport(0, List.of("sdb is failed", "sdc is failed"),
                Optional.of("no path")));

        List<StorageProblem> problems = node.volumes.storageHealth();
        assertEquals(1, problems.size(), problems.toString());
        assertEquals(StorageProblem.Severity.DEGRADED, problems.getFirst().severity());
        assertEquals("ScriptedPathsFailed", problems.getFirst().reason());
        assertTrue(problems.getFirst().message().contains(VOLUME + " (0 of 2 paths serving)"),
                problems.getFirst().message());

        node.transport.paths(other, new PathReport(0, List.of("sdd is failed"), Optional.of("no path")));
        problems = node.volumes.storageHealth();
        assertEquals(List.of(StorageProblem.Severity.UNREACHABLE),
                problems.stream().map(StorageProblem::severity).toList());
        assertEquals("ScriptedUnreachable", problems.getFirst().reason());
    }
}
