package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.state.RecordStore;
import dev.blocknode.testing.ScriptedTransport;
import dev.blocknode.transport.Attachment;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.Requests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.block;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * kubelet's NodeStageVolume again after the node rebooted, over the fake machine: the staging records survived,
 * the devices did not, and the kernel numbered the devices afresh. Found by the VM tier's iscsi-reboot scenario:
 * a raw block volume whose recorded device number now belonged to another LUN's map was answered "staged" with
 * nothing attached, and its publish then gave the pod the other volume's device.
 */
class RestageAfterRebootUnitTest {

    private static final String LUN_A = "360000000000000000e000000001f0002";
    private static final String LUN_B = "360000000000000000e000000001f0001";

    @TempDir
    Path temp;

    private LifecycleFixture node;

    @BeforeEach
    void wire() throws IOException {
        node = new LifecycleFixture(temp);
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    @Test
    void aBlockVolumeWhoseNumberIsNowAnotherLunsMapIsAttachedAgain() throws Exception {
        lun("lun-a", node.device, LUN_A);
        node.volumes.stage(blockStage("lun-a"));

        // The reboot: LUN A comes back at another number, and LUN B's map, made first, has the one A had.
        lun("lun-a", node.otherDevice, LUN_A);
        lun("lun-b", node.device, LUN_B);
        node.restarted().stage(blockStage("lun-a"));

        assertEquals(List.of("attach " + VOLUME, "recognise " + node.device.number(), "attach " + VOLUME),
                node.transport.calls());
        assertEquals(node.otherDevice.number(), recordedNumber());
    }

    @Test
    void aBlockVolumeStillOnItsLunIsLeftAsItIs() throws Exception {
        lun("lun-a", node.device, LUN_A);
        node.volumes.stage(blockStage("lun-a"));

        node.restarted().stage(blockStage("lun-a"));

        assertEquals(List.of("attach " + VOLUME, "recognise " + node.device.number()), node.transport.calls());
        assertEquals(node.device.number(), recordedNumber());
    }

    /** The device number the record on disk names (the fixture's own store is the one from before the restart). */
    private DeviceNumber recordedNumber() throws IOException {
        return StagingRecords.deviceNumber(new RecordStore(temp.resolve("state")).load(VOLUME).orElseThrow());
    }

    /** The transport's LUN {@code key}, with identity {@code wwid}, is on the fixture's device {@code at}. */
    private void lun(String key, Attachment at, String wwid) {
        node.transport.device(key, new Attachment(ScriptedTransport.NAME, at.device(), at.number(), wwid, Map.of()));
    }

    private Requests.Stage blockStage(String lunKey) {
        return new Requests.Stage(VOLUME, node.staging(VOLUME).toString(), block(),
                Map.of(ScriptedTransport.DEVICE_KEY, lunKey), Map.of(), Secrets.NONE);
    }
}
