package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.BlockAccessRecord;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.MountAccessRecord;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.DeviceIdentity;
import dev.blocknode.volume.record.StagingRecords;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which record holds a device (by number, told apart by identities) and a staging path. */
class DeviceClaimsUnitTest {

    private static final DeviceNumber LOOP = new DeviceNumber(7, 3);
    private static final String NAA = "60014052e3c1e6a5b4c34b58a1f2e3e4";

    @TempDir
    Path temp;

    private RecordStore store;
    private DeviceClaims claims;

    @BeforeEach
    void store() throws IOException {
        store = new RecordStore(temp.resolve("state"), "0123456789abcdef0123456789abcdef");
        claims = new DeviceClaims(new StagingRecords(store));
    }

    private StagingRecord.Builder recorded(String volumeId, StagePhase phase, DeviceNumber number, String identity) {
        return StagingRecord.newBuilder().setVolumeId(volumeId).setPhase(phase).setTransport("local")
                .setStagingPath("/k/" + volumeId)
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/x").setMajor(number.major())
                        .setMinor(number.minor()).setIdentity(identity))
                .setBlock(BlockAccessRecord.getDefaultInstance());
    }

    private static Attachment attached(DeviceNumber number, String identity) {
        return new Attachment("local", Path.of("/dev/alias"), number, identity, Map.of());
    }

    @Test
    void anotherRecordWithTheDeviceNumberRefusesTheStageInAnyPhaseAfterAttaching() throws Exception {
        for (StagePhase phase : new StagePhase[]{StagePhase.STAGING, StagePhase.STAGED, StagePhase.UNSTAGING}) {
            store.save(recorded("vD", phase, LOOP, "").build());
            VolumeException refused = assertThrows(DeviceClaims.HeldByAnotherVolume.class,
                    () -> claims.requireFree("vG", attached(LOOP, "")));
            assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
            assertTrue(refused.getMessage().contains("volume vD") && refused.getMessage().contains("7:3"),
                    refused.getMessage());
        }
        assertDoesNotThrow(() -> claims.requireFree("vD", attached(LOOP, "")), "its own record");
        assertDoesNotThrow(() -> claims.requireFree("vG", attached(new DeviceNumber(7, 4), "")));
    }

    @Test
    void anAttachingRecordNamesNoDevice() throws Exception {
        store.save(StagingRecord.newBuilder().setVolumeId("vD").setPhase(StagePhase.ATTACHING)
                .setStagingPath("/k/vD").build());
        assertDoesNotThrow(() -> claims.requireFree("vG", attached(LOOP, "")));
    }

    @Test
    void differentIdentitiesOnOneNumberAreDifferentDevicesAndAMissingIdentityProvesNothing() throws Exception {
        // A record from before a reboot: its number now belongs to another LUN.
        store.save(recorded("vOld", StagePhase.STAGED, LOOP, "naa." + NAA).build());
        assertDoesNotThrow(() -> claims.requireFree("vNew", attached(LOOP, "3600a0b80005ad1d7000004e34f2a1b2c")));
        // The same LUN in its multipath spelling, or a side without identity: the same device.
        assertThrows(DeviceClaims.HeldByAnotherVolume.class, () -> claims.requireFree("vNew", attached(LOOP,
                "3" + NAA)));
        assertThrows(DeviceClaims.HeldByAnotherVolume.class, () -> claims.requireFree("vNew", attached(LOOP, "")));

        assertFalse(DeviceIdentity.provablyDifferent("", "naa." + NAA));
        assertFalse(DeviceIdentity.provablyDifferent("naa." + NAA.toUpperCase(), "3" + NAA));
        assertTrue(DeviceIdentity.provablyDifferent("nvme.uuid-1", "nvme.uuid-2"));
        assertFalse(DeviceIdentity.provablyDifferent("nvme.uuid-1", " NVME.UUID-1 "));
    }

    @Test
    void unstageRefusesARecordWhosePathOrDeviceAnotherRecordClaims() throws Exception {
        StagingRecord owner = recorded("vD", StagePhase.STAGED, LOOP, "").setMount(MountAccessRecord.newBuilder()
                .setFsType("ext4")).putPublications("/k/pod/mount", PublicationRecord.getDefaultInstance()).build();
        store.save(owner);
        StagingRecord samePath = recorded("vF", StagePhase.UNSTAGING, new DeviceNumber(8, 0), "")
                .setStagingPath("/k/vD").build();
        StagingRecord sameDevice = recorded("vF", StagePhase.UNSTAGING, LOOP, "").build();
        for (StagingRecord forged : new StagingRecord[]{samePath, sameDevice}) {
            VolumeException refused = assertThrows(VolumeException.class, () -> claims.requireOwned(forged));
            assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
            assertTrue(refused.getMessage().contains("volume vD"), refused.getMessage());
        }
        assertDoesNotThrow(() -> claims.requireOwned(owner));
        // Another volume's publication there is no claim: the unmount checks the device of what it finds.
        assertDoesNotThrow(() -> claims.requireOwned(recorded("vF", StagePhase.UNSTAGING, new DeviceNumber(8, 0),
                "").setStagingPath("/k/pod/mount").build()));
        // The owner's record has no identity: the number is all there is, and it counts.
        assertThrows(VolumeException.class, () -> claims.requireOwned(recorded("vF", StagePhase.UNSTAGING, LOOP,
                "naa." + NAA).build()));
    }
}
