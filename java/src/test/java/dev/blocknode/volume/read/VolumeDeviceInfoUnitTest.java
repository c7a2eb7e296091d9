package dev.blocknode.volume.read;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.CryptRecord;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.InfoSeries;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each staged volume's devices as the info series shows them, over a fabricated sysfs: a multipath map and its
 * paths, a dm-crypt mapping over a map, a plain device; the PV's name from kubelet's paths; the rows go with the
 * record, and with the device; nothing for a record of an earlier boot; the host's names escaped and bounded.
 */
class VolumeDeviceInfoUnitTest {

    private static final String BOOT = "0123456789abcdef0123456789abcdef";
    private static final String WWID = "360014052e3c1d6a5b4c34b58a1f2e3d4";
    private static final Path KUBELET = Path.of("/var/lib/kubelet");
    private static final String BLOCK_STAGING = KUBELET + "/plugins/kubernetes.io/csi/volumeDevices/staging/pv-db";
    private static final String HASHED_STAGING = KUBELET + "/plugins/kubernetes.io/csi/block.csi.blocknode.dev/"
            + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08/globalmount";

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private RecordStore store;
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private VolumeDeviceInfo info;

    @BeforeEach
    void setUp() throws Exception {
        sysfs = new FakeSysfs(Files.createDirectories(temp.resolve("host")));
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 1), "sdb", new DeviceNumber(8, 16), "naa." + WWID.substring(1));
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 1), "sdc", new DeviceNumber(8, 32), "naa." + WWID.substring(1));
        sysfs.addMap(3, "mpatha", WWID, List.of("sdb", "sdc"));
        store = new RecordStore(temp.resolve("state"), BOOT);
        info = new VolumeDeviceInfo(store, new BlockDevices(sysfs.paths()), KUBELET, "node-7",
                registry.getPrometheusRegistry());
    }

    private static StagingRecord.Builder staged(String volumeId, String stagingPath, DeviceNumber device) {
        return StagingRecord.newBuilder().setVolumeId(volumeId).setPhase(StagePhase.STAGED).setTransport("fc")
                .setStagingPath(stagingPath).setBootId(BOOT)
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/dm-" + device.minor()).setMajor(device.major())
                        .setMinor(device.minor()).setIdentity(WWID));
    }

    private static Map<String, String> row(String volumeId, String pv, String role, String device, String dmName,
                                           String wwid) {
        return Map.of("node", "node-7", "volume_id", volumeId, "pv", pv, "role", role, "device", device,
                "dm_name", dmName, "wwid", wwid);
    }

    @Test
    void aMultipathVolumeIsItsMapAndEachPathAndGoesWhenUnstaged() throws Exception {
        store.save(staged("vol-db", BLOCK_STAGING, new DeviceNumber(253, 3)).build());
        info.refresh();
        assertEquals(List.of(
                row("vol-db", "pv-db", "volume", "dm-3", "mpatha", WWID),
                row("vol-db", "pv-db", "path", "sdb", "", WWID),
                row("vol-db", "pv-db", "path", "sdc", "", WWID)), rows());

        store.delete("vol-db");
        info.refresh();
        assertEquals(List.of(), rows(), "an unstaged volume's rows are gone");
    }

    @Test
    void anEncryptedVolumeIsItsMappingOverTheAttachedMap() throws Exception {
        sysfs.addDm(5, "blocknode-5ac0b1d2e3f4a5b6c7d8e9f0a1b2c3d4", "CRYPT-LUKS2-5ac0b1d2-blocknode", List.of("dm-3"));
        store.save(staged("vol-enc", HASHED_STAGING, new DeviceNumber(253, 3))
                .setCrypt(CryptRecord.newBuilder().setMappingName("blocknode-5ac0b1d2e3f4a5b6c7d8e9f0a1b2c3d4")
                        .setOpened(DeviceRecord.newBuilder().setPath("/dev/mapper/blocknode-5ac0")
                                .setMajor(253).setMinor(5)))
                .putPublications(KUBELET + "/pods/0f6c3a9e-1b2d-4c5e-8f70-a1b2c3d4e5f6/volumes/kubernetes.io~csi/"
                        + "pv-secret/mount", PublicationRecord.getDefaultInstance())
                .build());
        info.refresh();
        assertEquals(List.of(
                row("vol-enc", "pv-secret", "attached", "dm-3", "mpatha", WWID),
                row("vol-enc", "pv-secret", "volume", "dm-5", "blocknode-5ac0b1d2e3f4a5b6c7d8e9f0a1b2c3d4", WWID),
                row("vol-enc", "pv-secret", "path", "sdb", "", WWID),
                row("vol-enc", "pv-secret", "path", "sdc", "", WWID)),
                rows(), "the PV's name from the publication: a hashed staging path holds none");
    }

    @Test
    void aPlainDeviceIsOneRowAndAnUnknownPvIsEmpty() throws Exception {
        sysfs.addBlockDevice("nvme0n1", new DeviceNumber(259, 0));
        store.save(staged("vol-nvme", HASHED_STAGING, new DeviceNumber(259, 0)).setTransport("nvme-tcp")
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/nvme0n1").setMajor(259).setMinor(0)
                        .setIdentity("eui.0025388b91c1f2a3")).build());
        info.refresh();
        assertEquals(List.of(row("vol-nvme", "", "volume", "nvme0n1", "", "eui.0025388b91c1f2a3")), rows());
    }

    @Test
    void noRowForARecordOfAnEarlierBootOrWithoutADeviceOrWhoseDeviceIsGone() throws Exception {
        store.save(staged("vol-old", BLOCK_STAGING, new DeviceNumber(253, 3))
                .setBootId("fedcba9876543210fedcba9876543210").build());
        store.save(StagingRecord.newBuilder().setVolumeId("vol-attaching").setPhase(StagePhase.ATTACHING)
                .setStagingPath(BLOCK_STAGING).build());
        store.save(staged("vol-gone", BLOCK_STAGING, new DeviceNumber(8, 48)).build());
        info.refresh();
        assertEquals(List.of(), rows(), "253:3 of an earlier boot may be any device now; 8:48 does not exist");
    }

    @Test
    void theHostsNamesAreEscapedAndBounded() throws Exception {
        sysfs.addDm(7, "evil\nname\u202e" + "x".repeat(400), "LVM-abc", List.of());
        store.save(staged("vol\u2028id", BLOCK_STAGING, new DeviceNumber(253, 7)).build());
        info.refresh();
        List<Map<String, String>> rows = rows();
        assertEquals(1, rows.size(), rows.toString());
        String dmName = rows.get(0).get("dm_name");
        assertTrue(dmName.startsWith("evil\\\\nname\\\\u202exxx"), dmName);
        assertTrue(dmName.contains("more characters cut]") && dmName.length() < 300, dmName);
        assertEquals("vol\\\\u2028id", rows.get(0).get("volume_id"));
    }

    private List<Map<String, String>> rows() {
        return InfoSeries.rows(registry.scrape(), VolumeDeviceInfo.NAME);
    }
}
