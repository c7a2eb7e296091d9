package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static dev.blocknode.volume.LifecycleFixture.OTHER_VOLUME;
import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.block;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The boot id beside a staging record's device numbers, for each place that trusts them: a record of an earlier
 * boot, one written before records carried a boot id, one of this boot. The fixture's devices carry no identity
 * (as a loop device, an LVM volume or a mapping the transport does not know): the number is all there is, and
 * after a reboot it proves nothing.
 */
class RecordedBootUnitTest {

    private static final String EARLIER = "5f0c3a52-0000-4000-8000-00000000000e";

    @TempDir
    Path temp;

    private LifecycleFixture node;
    private String thisBoot;

    @BeforeEach
    void wire() throws IOException {
        node = new LifecycleFixture(temp);
        thisBoot = node.store.bootId();
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    @Test
    void aStageRecordsThisBootsIdWithTheDevice() throws Exception {
        node.stage(VOLUME, node.device, block());

        assertEquals(thisBoot, node.record(VOLUME).orElseThrow().getBootId());
    }

    @Test
    void aBlockRecordOfAnEarlierBootIsStagedAgainThoughItsNumberIsOnTheNode() throws Exception {
        node.inBoot(EARLIER).stage(node.stageRequest(VOLUME, node.device, block()));

        node.restarted().stage(node.stageRequest(VOLUME, node.device, block()));

        assertEquals(List.of("attach " + VOLUME, "attach " + VOLUME), node.transport.calls());
        assertEquals(thisBoot, storedRecord(VOLUME).getBootId());
    }

    @Test
    void aRecordWithoutABootIdStillInPlaceIsStampedNotStagedAgain() throws Exception {
        // An upgraded plugin: staging every volume again would refuse a raw block device a pod holds exclusively.
        node.stage(VOLUME, node.device, block());
        writtenWithoutBootId(VOLUME);

        node.restarted().stage(node.stageRequest(VOLUME, node.device, block()));

        assertEquals(List.of("attach " + VOLUME), node.transport.calls());
        assertEquals(thisBoot, storedRecord(VOLUME).getBootId());
    }

    @Test
    void aRecordOfThisBootStillInPlaceIsLeftAsItIs() throws Exception {
        node.stage(VOLUME, node.device, block());

        node.restarted().stage(node.stageRequest(VOLUME, node.device, block()));

        assertEquals(List.of("attach " + VOLUME), node.transport.calls());
    }

    @Test
    void aPublishOfARecordOfAnEarlierBootIsRefusedUntilTheVolumeIsStagedAgain() throws Exception {
        node.inBoot(EARLIER).stage(node.stageRequest(VOLUME, node.device, block()));
        NodeVolumes restarted = node.restarted();
        Requests.Publish publish = new Requests.Publish(VOLUME, node.staging(VOLUME).toString(),
                node.blockTarget("pod-a", VOLUME).toString(), block(), false);

        VolumeException refused = assertThrows(VolumeException.class, () -> restarted.publish(publish));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("earlier boot"), refused.getMessage());
        restarted.stage(node.stageRequest(VOLUME, node.device, block()));
        restarted.publish(publish);
        restarted.unpublish(new Requests.Unpublish(VOLUME, publish.targetPath()));
    }

    @Test
    void aPublishOfARecordWithoutABootIdIsServedAsBefore() throws Exception {
        node.stage(VOLUME, node.device, block());
        writtenWithoutBootId(VOLUME);
        NodeVolumes restarted = node.restarted();
        Requests.Publish publish = new Requests.Publish(VOLUME, node.staging(VOLUME).toString(),
                node.blockTarget("pod-a", VOLUME).toString(), block(), false);

        restarted.publish(publish);

        restarted.unpublish(new Requests.Unpublish(VOLUME, publish.targetPath()));
    }

    @Test
    void anotherVolumesRecordOfAnEarlierBootClaimsNoDeviceByItsNumber() throws Exception {
        node.inBoot(EARLIER).stage(node.stageRequest(OTHER_VOLUME, node.device, block()));

        node.restarted().stage(node.stageRequest(VOLUME, node.device, block()));

        assertEquals(thisBoot, storedRecord(VOLUME).getBootId());
    }

    @Test
    void anotherVolumesRecordWithoutABootIdStillClaimsTheDevice() throws Exception {
        node.stage(OTHER_VOLUME, node.device, block());
        writtenWithoutBootId(OTHER_VOLUME);
        NodeVolumes restarted = node.restarted();

        assertThrows(DeviceClaims.HeldByAnotherVolume.class,
                () -> restarted.stage(node.stageRequest(VOLUME, node.device, block())));
    }

    @Test
    void anUnstageOfARecordOfAnEarlierBootIgnoresWhatIsMountedAtItsNumberNow() throws Exception {
        node.inBoot(EARLIER).stage(node.stageRequest(VOLUME, node.device, block()));
        // In this boot, the number is another volume's device, with its filesystem mounted.
        NodeVolumes restarted = node.restarted();
        node.expectBlankFormatted(node.device);
        restarted.stage(node.stageRequest(OTHER_VOLUME, node.device, LifecycleFixture.filesystem()));

        restarted.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));

        assertFalse(new RecordStore(temp.resolve("state")).load(VOLUME).isPresent());
        // Undone by its contexts, as an interrupted attach is: the recorded number takes no part in it.
        assertEquals("abandon " + VOLUME, node.transport.calls().getLast());
    }

    @Test
    void theStartupCheckSaysARecordOfAnEarlierBootIsNotInPlace() throws Exception {
        node.inBoot(EARLIER).stage(node.stageRequest(VOLUME, node.device, block()));

        StartupCheck.Report report = new StartupCheck(node.host, new RecordStore(temp.resolve("state"))).run();

        assertEquals(0, report.healthy());
        assertEquals(1, report.stale());
        assertTrue(report.findings().getFirst().contains("earlier boot"), report.findings().toString());
    }

    @Test
    void theStartupCheckCallsARecordOfThisBootInPlace() throws Exception {
        node.stage(VOLUME, node.device, block());

        StartupCheck.Report report = new StartupCheck(node.host, new RecordStore(temp.resolve("state"))).run();

        assertEquals(1, report.healthy());
    }

    private StagingRecord storedRecord(String volumeId) throws IOException {
        return new RecordStore(temp.resolve("state")).load(volumeId).orElseThrow();
    }

    /** The record on disk as a plugin before the boot id wrote it. */
    private void writtenWithoutBootId(String volumeId) throws IOException {
        RecordStore store = new RecordStore(temp.resolve("state"));
        store.save(store.load(volumeId).orElseThrow().toBuilder().clearBootId().build());
    }
}
