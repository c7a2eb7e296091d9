package dev.blocknode.volume.read;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FilesystemUsage;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.record.RecordedBoot;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.Requests;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * NodeGetVolumeStats: statvfs for filesystems, the device size for block volumes, and what is wrong with the
 * volume (also what NodeGetVolumeHealth reports of a staged volume).
 * kubelet asks for every volume once a minute, so this reads nothing but the path and sysfs: no mount
 * table, no commands, no operation guard.
 */
public final class VolumeStatsReader {

    private final Host host;
    private final VolumeLocator locator;
    private final Transports transports;

    public VolumeStatsReader(Host host, VolumeLocator locator, Transports transports) {
        this.host = host;
        this.locator = locator;
        this.transports = transports;
    }

    public VolumeStats read(Requests.Stats request) throws VolumeException {
        try (VolumeLocator.Located located = locator.locate(request.volumeId(), request.volumePath())) {
            return read(request, located);
        }
    }

    private VolumeStats read(Requests.Stats request, VolumeLocator.Located located) throws VolumeException {
        StagingRecord record = located.record();
        DeviceNumber number = StagingRecords.usedNumber(record);
        Path device = StagingRecords.usedPath(record);
        // A number of an earlier boot (a volume not staged again since) names nothing of the volume's now.
        boolean devicePresent = locator.bootOf(record) != RecordedBoot.EARLIER_BOOT
                && host.blockDevices().exists(number);
        try {
            if (record.hasBlock()) {
                if (!devicePresent) {
                    return new VolumeStats(0, OptionalLong.empty(), OptionalLong.empty(), OptionalLong.empty(),
                            OptionalLong.empty(), OptionalLong.empty(), List.of(gone(request, device, number)));
                }
                // The recorded device's size, whichever of the volume's paths was asked (staging path, publication,
                // kubelet's own link to the device): never read through the request's path.
                long size = host.blockDevices().sizeBytes(device);
                List<HealthProblem> problems = new ArrayList<>(2);
                if (host.blockDevices().isReadOnly(number) && !located.expectedReadOnly()) {
                    problems.add(new HealthProblem(HealthProblem.Kind.DEVICE_READ_ONLY,
                            "device " + device + " turned read-only"));
                }
                pathProblem(record).ifPresent(problems::add);
                return new VolumeStats(size, OptionalLong.empty(), OptionalLong.empty(), OptionalLong.empty(),
                        OptionalLong.empty(), OptionalLong.empty(), problems);
            }
            FilesystemUsage usage = located.usage();
            List<HealthProblem> problems = new ArrayList<>(2);
            if (!devicePresent) {
                // Nothing else is worth saying about a volume whose device is gone: its paths went with it.
                problems.add(gone(request, device, number));
            } else {
                if (usage.readOnly() && !located.expectedReadOnly()) {
                    problems.add(new HealthProblem(HealthProblem.Kind.FILESYSTEM_READ_ONLY, "the filesystem on "
                            + device + " is read-only though it was mounted read-write (the kernel does this after"
                            + " I/O or filesystem errors; see the node's kernel log)"));
                }
                pathProblem(record).ifPresent(problems::add);
            }
            return new VolumeStats(usage.totalBytes(), OptionalLong.of(usage.availableBytes()),
                    OptionalLong.of(usage.usedBytes()), OptionalLong.of(usage.files()),
                    OptionalLong.of(usage.freeFiles()), OptionalLong.of(usage.files() - usage.freeFiles()), problems);
        } catch (IOException e) {
            throw VolumeException.internal("cannot read the statistics of volume " + request.volumeId() + " at "
                    + located.path(), e);
        }
    }

    private Optional<HealthProblem> pathProblem(StagingRecord record) throws IOException {
        return StagingRecords.pathHealth(transports, record).flatMap(HealthProblem::of);
    }

    /** Built only when needed: stats are asked for every volume once a minute, and most devices are there. */
    private static HealthProblem gone(Requests.Stats request, Path device, DeviceNumber number) {
        return new HealthProblem(HealthProblem.Kind.DEVICE_MISSING, "device " + device + " (" + number
                + ") of volume " + request.volumeId() + " is no longer present on the node");
    }
}
