package dev.blocknode.volume.read;

import dev.blocknode.logging.Printable;
import dev.blocknode.metrics.InfoSeries;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.block.DeviceMapperId;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.kubelet.KubeletPvNames;
import dev.blocknode.volume.record.RecordedBoot;
import dev.blocknode.volume.record.StagingRecords;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Logger;
import java.util.stream.Stream;

/**
 * {@code blocknode_volume_device_info{node, volume_id, pv, role, device, dm_name, wwid} 1}: the block devices of
 * each volume staged on this node, by the kernel names node_exporter's {@code node_disk_*} series carry in their
 * {@code device} label, so that a disk's latency, queue and throughput join to its volume in one query
 * (docs/operations.md). One row per device: the one the volume's I/O goes through ({@code role="volume"}: an
 * encrypted volume's dm-crypt mapping, else the device the transport attached), the attached device beneath a
 * dm-crypt mapping ({@code attached}), and each path of a multipath map ({@code path}). Rebuilt from the staging
 * records and sysfs right before each scrape, like {@link VolumePathGauges}: a volume's rows come with its device
 * and go with its record at unstage; a record of an earlier boot names no device of this one. Every label value
 * is escaped and bounded as a log line's is: a map's name is the host's, a volume id the caller's.
 */
public final class VolumeDeviceInfo {

    public static final String NAME = "blocknode_volume_device_info";
    /** Far above a kernel name, a dm name (127), a WWID or a PV name (253): a longer value is cut, saying so. */
    static final int MAX_LABEL_CHARS = 256;
    /** The uuid prefix multipathd gives its maps: their slaves are the volume's paths. */
    private static final String MULTIPATH_UUID = "mpath-";
    private static final Logger LOG = Logger.getLogger(VolumeDeviceInfo.class.getName());

    /** What every row of one volume says of it. */
    private record Volume(String node, String volumeId, String pv, String wwid) {

        List<String> row(String role, String device, String dmName) {
            return List.of(node, volumeId, pv, role, bounded(device), bounded(dmName), wwid);
        }
    }

    /** One device as sysfs names it now: its kernel name, and its device-mapper name and uuid if it is a dm one. */
    private record Device(String kernelName, Optional<DeviceMapperId> mapper) {

        String dmName() {
            return mapper.map(DeviceMapperId::name).orElse("");
        }

        boolean isMultipathMap() {
            return mapper.isPresent() && mapper.get().uuid().startsWith(MULTIPATH_UUID);
        }
    }

    private final RecordStore store;
    private final BlockDevices devices;
    private final Path kubeletRoot;
    private final String node;
    private final InfoSeries series;
    /** Each volume's rows at the last refresh: what it keeps while its devices cannot be read. */
    private Map<String, Set<List<String>>> previous = Map.of();
    /** The last failure logged, so that one that lasts is logged once, not at every scrape. */
    private String lastFailure = "";

    public VolumeDeviceInfo(RecordStore store, BlockDevices devices, Path kubeletRoot, String node,
                            PrometheusRegistry registry) {
        this.store = store;
        this.devices = devices;
        this.kubeletRoot = kubeletRoot;
        this.node = bounded(node);
        this.series = InfoSeries.register(registry, NAME, "1 per block device of each volume staged on this node:"
                + " device is its kernel name as node_exporter's node_disk_* series label it (join on it and the"
                + " node), role what it is to the volume (volume: what its I/O goes through; attached: the"
                + " transport's device under a dm-crypt mapping; path: one path of its multipath map), dm_name its"
                + " device-mapper name, wwid the identity the volume was verified by, pv its PersistentVolume (where"
                + " kubelet's paths name it)", "node", "volume_id", "pv", "role", "device", "dm_name", "wwid");
    }

    /** Rebuilds the rows; a volume whose devices cannot be read keeps its previous rows, and that is logged once. */
    public void refresh() {
        Map<String, Set<List<String>>> current = new HashMap<>();
        List<String> failures = new ArrayList<>();
        for (StagingRecord record : store.all()) {
            try {
                current.put(record.getVolumeId(), rowsOf(record));
            } catch (IOException | RuntimeException e) {
                current.put(record.getVolumeId(), previous.getOrDefault(record.getVolumeId(), Set.of()));
                failures.add("volume " + record.getVolumeId() + ": " + e.getMessage());
            }
        }
        Set<List<String>> rows = new HashSet<>();
        current.values().forEach(rows::addAll);
        series.replace(rows);
        previous = current;
        String failure = String.join("; ", failures);
        if (!failure.isEmpty() && !failure.equals(lastFailure)) {
            LOG.warning(() -> "volume device metrics: cannot read the devices of " + failure
                    + " (keeping what was read before)");
        }
        lastFailure = failure;
    }

    private Set<List<String>> rowsOf(StagingRecord record) throws IOException {
        if (!record.hasDevice() || RecordedBoot.of(record, store.bootId()) == RecordedBoot.EARLIER_BOOT) {
            return Set.of(); // nothing attached yet, or numbers that name nothing of this volume's now
        }
        Volume volume = new Volume(node, bounded(record.getVolumeId()), bounded(pvName(record)),
                bounded(record.getDevice().getIdentity()));
        Set<List<String>> rows = new HashSet<>();
        DeviceNumber used = StagingRecords.usedNumber(record);
        DeviceNumber attachedNumber = StagingRecords.deviceNumber(record);
        Optional<Device> attached = describe(attachedNumber);
        if (!used.equals(attachedNumber)) {
            describe(used).ifPresent(d -> rows.add(volume.row("volume", d.kernelName(), d.dmName())));
        }
        if (attached.isPresent()) {
            String role = used.equals(attachedNumber) ? "volume" : "attached";
            rows.add(volume.row(role, attached.get().kernelName(), attached.get().dmName()));
            if (attached.get().isMultipathMap()) {
                for (String path : devices.slaves(attachedNumber)) {
                    rows.add(volume.row("path", path, ""));
                }
            }
        }
        return rows;
    }

    /** The device at {@code number} as sysfs has it now; empty once the kernel has removed it. */
    private Optional<Device> describe(DeviceNumber number) throws IOException {
        Optional<String> name = devices.kernelName(number);
        if (name.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new Device(name.get(), devices.deviceMapperId(number)));
    }

    /** The PV's name from the staging path, else from a publication; empty where kubelet's paths hold none. */
    private String pvName(StagingRecord record) {
        return Stream.concat(Stream.of(record.getStagingPath()), record.getPublicationsMap().keySet().stream().sorted())
                .filter(path -> !path.isEmpty())
                .flatMap(path -> KubeletPvNames.of(kubeletRoot, Path.of(path)).stream())
                .findFirst().orElse("");
    }

    private static String bounded(String value) {
        return Printable.bounded(value, MAX_LABEL_CHARS);
    }
}
