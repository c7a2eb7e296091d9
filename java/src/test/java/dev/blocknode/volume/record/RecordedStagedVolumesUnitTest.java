package dev.blocknode.volume.record;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.StagedVolumes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The staging records as a transport sees them: its own volumes, in every phase, with what they hold. */
class RecordedStagedVolumesUnitTest {

    @TempDir
    Path temp;

    @Test
    void listsEveryRecordOfTheTransportWithItsDeviceWhenOneIsRecorded() throws Exception {
        RecordStore store = new RecordStore(temp.resolve("state"));
        store.save(StagingRecord.newBuilder().setVolumeId("vol-attaching").setTransport("nvme-tcp")
                .setPhase(StagePhase.ATTACHING).setStagingPath("/staging/a")
                .putVolumeContext("subsysNQN", "nqn.2024-01.dev.blocknode:a").build());
        store.save(StagingRecord.newBuilder().setVolumeId("vol-staged").setTransport("nvme-tcp")
                .setPhase(StagePhase.STAGED).setStagingPath("/staging/b")
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/nvme0n1").setMajor(259).setMinor(0))
                .putAttachment("subsysNQN", "nqn.2024-01.dev.blocknode:a").build());
        store.save(StagingRecord.newBuilder().setVolumeId("vol-iscsi").setTransport("iscsi")
                .setPhase(StagePhase.STAGED).setStagingPath("/staging/c").build());

        List<StagedVolumes.StagedVolume> volumes = new RecordedStagedVolumes(store).of("nvme-tcp").stream()
                .sorted(Comparator.comparing(StagedVolumes.StagedVolume::volumeId)).toList();

        assertEquals(List.of("vol-attaching", "vol-staged"),
                volumes.stream().map(StagedVolumes.StagedVolume::volumeId).toList());
        assertEquals(Optional.empty(), volumes.get(0).device());
        assertEquals(Map.of("subsysNQN", "nqn.2024-01.dev.blocknode:a"), volumes.get(0).request().volumeContext());
        assertEquals(Optional.of(new DeviceNumber(259, 0)), volumes.get(1).device());
        assertEquals(Map.of("subsysNQN", "nqn.2024-01.dev.blocknode:a"), volumes.get(1).attachment());
    }

    /** A record of an earlier boot names no device: its number may be another volume's now (NVMe's users). */
    @Test
    void aRecordOfAnEarlierBootNamesNoDeviceAndOneOfThisBootOrOfNoneDoes() throws Exception {
        RecordStore store = new RecordStore(temp.resolve("state"), "5f0c3a52-0000-4000-8000-00000000000e");
        for (String[] volume : new String[][]{{"vol-earlier", "0b7c1d2e-0000-4000-8000-000000000001"},
                {"vol-this", store.bootId()}, {"vol-unknown", ""}}) {
            store.save(StagingRecord.newBuilder().setVolumeId(volume[0]).setTransport("nvme-tcp")
                    .setPhase(StagePhase.STAGED).setStagingPath("/staging/" + volume[0]).setBootId(volume[1])
                    .setDevice(DeviceRecord.newBuilder().setPath("/dev/nvme0n1").setMajor(259).setMinor(0)).build());
        }

        Map<String, Optional<DeviceNumber>> devices = new java.util.TreeMap<>();
        new RecordedStagedVolumes(store).of("nvme-tcp").forEach(v -> devices.put(v.volumeId(), v.device()));

        assertEquals(Map.of("vol-earlier", Optional.empty(), "vol-this", Optional.of(new DeviceNumber(259, 0)),
                "vol-unknown", Optional.of(new DeviceNumber(259, 0))), devices);
    }
}
