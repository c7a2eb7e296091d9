package dev.blocknode.volume.read;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.state.KeptLeftovers;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.UnreadableRecordException;
import dev.blocknode.state.v1.PublicationRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.kubelet.KubeletPods;
import dev.blocknode.volume.record.Publications;
import dev.blocknode.volume.record.RecordedBoot;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;

/**
 * What {@code blocknode status} shows: every volume the state directory's records name, with what the node
 * has of it (device in sysfs, staging mount and publications in the mount table) and the problems found, in
 * the plugin's own vocabulary ({@link HealthProblem.Kind}) and by the plugin's own rules where they need no
 * running plugin ({@link Publications#holdsVolume}, {@link KubeletPods}, {@link StagingRecords}). Reads only:
 * the records through {@link RecordStore#snapshot}, the mount table as given, sysfs by device number.
 *
 * <p>Like NodeGetVolumeHealth, only a STAGED volume's device, mounts and paths are checked. A record in another phase
 * is itself a problem ({@link StatusProblem#unfinished}): a NodeStageVolume or NodeUnstageVolume that has not
 * finished, which the state directory, all status has (the plugin keeps its failed stages in memory:
 * {@link RecentStageFailures}), cannot tell running from failed or cut short; the volume is not usable here in any of
 * them, so it is never shown healthy. Every problem carries its next step ({@link NextSteps}). A SAN volume's paths
 * are read as the plugin reads them, by its transport from sysfs (sessions, remote ports, map slaves, NVMe
 * controllers), so status and NodeGetVolumeHealth name the same lost path. Unlike the plugin, a path's filesystem is not opened
 * (no read-only filesystem finding) and the storage is not asked (no fencing finding): those need the plugin.
 */
public final class NodeStatusReader {

    /** A recorded device: where it was, its number and identity, and whether the kernel still has it. */
    public record Device(String path, DeviceNumber number, String identity, boolean present) {
    }

    /** One publication: its target, how it was published, its pod when kubelet's layout says, and whether it is mounted. */
    public record Publication(String target, boolean readOnly, Optional<String> podUid, boolean mounted) {
    }

    /** How a SAN volume's paths serve: how many do, and what is wrong with each of the others. */
    public record Paths(int serving, List<String> failures) {

        public Paths {
            failures = List.copyOf(failures);
        }

        public int total() {
            return serving + failures.size();
        }
    }

    /**
     * One volume. {@code stagingMounted} is empty where there is nothing to check: a block volume (its staging
     * path is a directory, not a mount) or a volume not STAGED. {@code paths} is empty where its transport has
     * no paths to read (a local device) or the volume is not STAGED with its device present. {@code updatedAt}:
     * when its record last changed (empty for a record written without the time).
     */
    public record Volume(String volumeId, String phase, String transport, String accessType, Optional<Device> device,
                         String stagingPath, Optional<Boolean> stagingMounted, Optional<Paths> paths,
                         List<Publication> publications, OptionalLong fenceKey, List<StatusProblem> problems,
                         Optional<Instant> updatedAt) {
    }

    /** A record file that could not be read, and why. */
    public record UnreadableRecord(String file, String reason) {

        public String next() {
            return NextSteps.RECORD_UNREADABLE;
        }
    }

    /**
     * A mount that looks like a blocknode volume's but that no record names: one in this driver's staging
     * directory (kubelet staged a volume the plugin has no record of: a lost or deleted record), or a mount of a
     * recorded volume's device at a path that is neither its staging path nor one of its publications (a
     * publication left behind, or a mount made by hand). NodeUnstageVolume and NodeUnpublishVolume still release
     * them (they trace a path to its device), but nothing else will.
     *
     * @param volumeId the volume whose device it is, empty for a staging-directory mount of an unknown device
     */
    public record UnrecordedMount(Path mountPoint, DeviceNumber device, String fsType, Optional<String> volumeId) {

        public String next() {
            return volumeId.isPresent() ? NextSteps.UNRECORDED_MOUNT : NextSteps.UNRECORDED_STAGING_MOUNT;
        }
    }

    /** Where kubelet keeps this driver's filesystem staging mounts: {@code ROOT/plugins/kubernetes.io/csi/DRIVER}. */
    public record KubeletLayout(Path root, String driverName) {

        Path stagingRoot() {
            return root.resolve("plugins/kubernetes.io/csi").resolve(driverName);
        }
    }

    /**
     * The node's volumes, problems first then by id, the record files that could not be read, the mounts no
     * record explains, and what the repair loop's last sweep left on the node though no record names it (when it
     * kept anything: the plugin's report in the state directory, with when it was written).
     */
    public record NodeStatus(List<Volume> volumes, List<UnreadableRecord> unreadableRecords,
                             List<UnrecordedMount> unrecordedMounts, Optional<KeptLeftovers.Report> sweepKept) {

        /** No volume with a problem, no unreadable record, no mount that no record explains, no leftover kept. */
        public boolean healthy() {
            return unreadableRecords.isEmpty() && unrecordedMounts.isEmpty()
                    && sweepKept.map(k -> k.kept().isEmpty()).orElse(true)
                    && volumes.stream().allMatch(v -> v.problems().isEmpty());
        }

        /** Only {@code volumes}, with everything that is not about one volume kept. */
        public NodeStatus only(List<Volume> volumes) {
            return new NodeStatus(volumes, unreadableRecords, unrecordedMounts, sweepKept);
        }
    }

    private NodeStatusReader() {
    }

    /**
     * @param snapshot the records, as {@link RecordStore#snapshot} read them
     * @param mounts   the mount table (/proc/self/mountinfo)
     * @param host     where sysfs is
     * @param kubelet    kubelet's root, for the pod of each publication, and the driver's staging directory
     * @param transports the plugin's transports, which read a volume's paths from sysfs; given a host that runs
     *                   no command, since status only reads
     */
    public static NodeStatus read(RecordStore.Snapshot snapshot, List<MountEntry> mounts, HostPaths host,
                                  KubeletLayout kubelet, Transports transports) {
        BlockDevices devices = new BlockDevices(host);
        List<Volume> volumes = new ArrayList<>();
        for (StagingRecord record : snapshot.records()) {
            volumes.add(volume(record, RecordedBoot.of(record, snapshot.bootId()), mounts, devices, kubelet.root(),
                    transports));
        }
        volumes.sort(Comparator.comparing((Volume v) -> v.problems().isEmpty()).thenComparing(Volume::volumeId));
        List<UnreadableRecord> unreadable = new ArrayList<>();
        for (UnreadableRecordException e : snapshot.unreadable()) {
            unreadable.add(new UnreadableRecord(e.file().toString(), e.getMessage()));
        }
        return new NodeStatus(List.copyOf(volumes), List.copyOf(unreadable),
                unrecordedMounts(snapshot.records(), mounts, kubelet), snapshot.kept());
    }

    /**
     * The mounts that look like a volume's but that no record names (see {@link UnrecordedMount}). A block
     * volume's publications are binds of a device node (the mount table shows devtmpfs, not the volume's device),
     * so only filesystem mounts can be told this way.
     */
    static List<UnrecordedMount> unrecordedMounts(List<StagingRecord> records, List<MountEntry> mounts,
                                                  KubeletLayout kubelet) {
        Set<Path> named = new HashSet<>();
        Map<DeviceNumber, String> volumeOfDevice = new HashMap<>();
        for (StagingRecord record : records) {
            if (!record.getStagingPath().isEmpty()) {
                named.add(Path.of(record.getStagingPath()));
            }
            record.getPublicationsMap().keySet().forEach(target -> named.add(Path.of(target)));
            if (record.hasDevice() && !record.hasBlock()) {
                volumeOfDevice.put(StagingRecords.usedNumber(record), record.getVolumeId());
            }
        }
        Path stagingRoot = kubelet.stagingRoot();
        List<UnrecordedMount> found = new ArrayList<>();
        for (MountEntry entry : mounts) {
            if (named.contains(entry.mountPoint())) {
                continue;
            }
            Optional<String> volume = Optional.ofNullable(volumeOfDevice.get(entry.device()));
            if (volume.isPresent() || entry.mountPoint().startsWith(stagingRoot)) {
                found.add(new UnrecordedMount(entry.mountPoint(), entry.device(), entry.fsType(), volume));
            }
        }
        found.sort(Comparator.comparing(m -> m.mountPoint().toString()));
        return List.copyOf(found);
    }

    private static Volume volume(StagingRecord record, RecordedBoot boot, List<MountEntry> mounts,
                                 BlockDevices devices, Path kubeletRoot, Transports transports) {
        boolean block = record.hasBlock();
        boolean staged = record.getPhase() == StagePhase.STAGED;
        Optional<Device> device = deviceOf(record, boot, devices);
        List<StatusProblem> problems = new ArrayList<>();
        StatusProblem.unfinished(record, device, boot).ifPresent(problems::add);
        if (staged) {
            deviceProblem(record.getVolumeId(), device, boot).ifPresent(problems::add);
        }
        boolean devicePresent = device.map(Device::present).orElse(false);
        Optional<Paths> paths = Optional.empty();
        if (staged && devicePresent) {
            paths = paths(transports, record, problems);
        }
        Optional<Boolean> stagingMounted = Optional.empty();
        if (staged && !block && record.hasDevice()) {
            stagingMounted = Optional.of(stagingMounted(record, mounts, devicePresent, problems));
        }
        List<Publication> publications = publications(record, mounts, kubeletRoot, devicePresent, problems);
        return new Volume(record.getVolumeId(), record.getPhase().name(), record.getTransport(),
                block ? "block" : "mount", device, record.getStagingPath(), stagingMounted, paths, publications,
                record.getFenceKey() == 0 ? OptionalLong.empty() : OptionalLong.of(record.getFenceKey()),
                List.copyOf(problems), StatusProblem.updatedAt(record));
    }

    /** The recorded device, present when this boot's sysfs has its number. */
    private static Optional<Device> deviceOf(StagingRecord record, RecordedBoot boot, BlockDevices devices) {
        if (!record.hasDevice()) {
            return Optional.empty();
        }
        DeviceNumber number = StagingRecords.deviceNumber(record);
        // A number of an earlier boot names nothing of the volume's, whatever has it now: not present.
        return Optional.of(new Device(record.getDevice().getPath(), number, record.getDevice().getIdentity(),
                boot != RecordedBoot.EARLIER_BOOT && devices.exists(number)));
    }

    /** A staged volume's device that is of an earlier boot, or gone from the node. */
    private static Optional<StatusProblem> deviceProblem(String volumeId, Optional<Device> device, RecordedBoot boot) {
        if (device.isEmpty()) {
            return Optional.empty();
        }
        if (boot == RecordedBoot.EARLIER_BOOT) {
            return Optional.of(StatusProblem.of(HealthProblem.Kind.DEVICE_MISSING, "volume " + volumeId + " was"
                    + " staged in an earlier boot of the node, and is not staged again yet (kubelet's NodeStageVolume"
                    + " does it); its device " + device.get().path() + " (" + device.get().number() + ") is of that"
                    + " boot", NextSteps.EARLIER_BOOT));
        }
        if (!device.get().present()) {
            // As NodeGetVolumeStats says: nothing else is worth saying of a volume whose device is gone.
            return Optional.of(StatusProblem.of(HealthProblem.Kind.DEVICE_MISSING, "device " + device.get().path()
                    + " (" + device.get().number() + ") of volume " + volumeId + " is gone from the node",
                    NextSteps.DEVICE_GONE));
        }
        return Optional.empty();
    }

    /** Whether a staged filesystem volume's device is mounted at its staging path (a problem when not). */
    private static boolean stagingMounted(StagingRecord record, List<MountEntry> mounts, boolean devicePresent,
                                          List<StatusProblem> problems) {
        DeviceNumber number = StagingRecords.usedNumber(record);
        boolean mounted = mountAt(mounts, record.getStagingPath())
                .filter(entry -> entry.device().equals(number)).isPresent();
        if (!mounted && devicePresent) {
            problems.add(StatusProblem.of(HealthProblem.Kind.STAGING_MOUNT_MISSING, "volume " + record.getVolumeId()
                    + " is not mounted at its staging path " + record.getStagingPath(),
                    NextSteps.STAGING_MOUNT_MISSING));
        }
        return mounted;
    }

    /** The recorded publications, in path order, each mounted or not (a problem when not, of a staged volume). */
    private static List<Publication> publications(StagingRecord record, List<MountEntry> mounts, Path kubeletRoot,
                                                  boolean devicePresent, List<StatusProblem> problems) {
        boolean staged = record.getPhase() == StagePhase.STAGED;
        List<Publication> publications = new ArrayList<>();
        for (Map.Entry<String, PublicationRecord> entry : new TreeMap<>(record.getPublicationsMap()).entrySet()) {
            Path target = Path.of(entry.getKey());
            boolean mounted = staged && record.hasDevice() && publishedAt(record, target, mounts);
            publications.add(new Publication(entry.getKey(), entry.getValue().getReadonly(),
                    KubeletPods.podOf(kubeletRoot, target, record.hasBlock()), mounted));
            if (staged && !mounted && devicePresent) {
                problems.add(StatusProblem.of(HealthProblem.Kind.PUBLICATION_MISSING, "volume " + record.getVolumeId()
                        + " is no longer mounted at its publication " + target, NextSteps.PUBLICATION_MISSING));
            }
        }
        return List.copyOf(publications);
    }

    /**
     * The volume's paths as its transport reads them, adding a lost path's problem as NodeGetVolumeHealth does.
     * A path that cannot be read is itself the finding: sysfs went away under the read, so the volume's paths are
     * reported unknown rather than the command failing for every other volume.
     */
    private static Optional<Paths> paths(Transports transports, StagingRecord record, List<StatusProblem> problems) {
        Optional<PathReport> report;
        try {
            report = StagingRecords.pathHealth(transports, record);
        } catch (IOException e) {
            report = Optional.of(new PathReport(0, List.of("paths cannot be read from sysfs: " + e.getMessage()),
                    Optional.of("the paths of volume " + record.getVolumeId() + " cannot be read from sysfs: "
                            + e.getMessage())));
        }
        report.flatMap(HealthProblem::of).ifPresent(problem -> problems.add(StatusProblem.of(problem, NextSteps.PATHS)));
        return report.map(r -> new Paths(r.serving(), r.failures()));
    }

    /** The topmost mount at {@code path} (the last one listed: what a lookup of the path reaches). */
    private static Optional<MountEntry> mountAt(List<MountEntry> mounts, String path) {
        Path wanted = Path.of(path);
        MountEntry found = null;
        for (MountEntry entry : mounts) {
            if (entry.mountPoint().equals(wanted)) {
                found = entry;
            }
        }
        return Optional.ofNullable(found);
    }

    /**
     * Whether the volume is mounted at a publication, by the plugin's rule ({@link Publications#holdsVolume}): a
     * filesystem publication is a mount of the volume's device (the mount table says which); a block one is a
     * device node of it bind-mounted there (a stat of the target says which device, read without following a link).
     */
    private static boolean publishedAt(StagingRecord record, Path target, List<MountEntry> mounts) {
        Optional<MountEntry> mount = mountAt(mounts, target.toString());
        if (mount.isEmpty()) {
            return false;
        }
        if (!record.hasBlock()) {
            return Publications.holdsVolume(record, target,
                    new FileStat(mount.get().device(), new DeviceNumber(0, 0), 0, FileStat.MountRoot.YES));
        }
        try {
            Map<String, Object> stat = Files.readAttributes(target, "unix:mode,rdev", LinkOption.NOFOLLOW_LINKS);
            long rdev = (Long) stat.get("rdev");
            return Publications.holdsVolume(record, target, new FileStat(mount.get().device(), decode(rdev),
                    (Integer) stat.get("mode"), FileStat.MountRoot.YES));
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** glibc's dev_t encoding (gnu_dev_major/minor). */
    static DeviceNumber decode(long dev) {
        long major = ((dev >>> 8) & 0xfffL) | ((dev >>> 32) & 0xfffff000L);
        long minor = (dev & 0xffL) | ((dev >>> 12) & 0xffffff00L);
        return new DeviceNumber(major, minor);
    }
}
