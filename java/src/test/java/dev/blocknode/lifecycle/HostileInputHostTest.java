package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.CapacityRange;
import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetStorageHealthRequest;
import dev.blocknode.csi.v1.NodeGetVolumeHealthRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.logging.LogCapture;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountTable;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.HostileInput;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile input: hundreds of malformed requests to every Node RPC that takes a volume, a path or secrets (stage,
 * unstage, publish, unpublish, stats, expand, volume and storage health), with missing and random fields, huge
 * strings, NUL bytes,
 * newlines and other control characters, relative paths, "..", symlinks out of the kubelet root, unknown fs
 * types and access modes, forged mount options, oversized ids, contexts, secrets and mount flags,
 * contradictory capabilities). Each gets a spec code for bad input with a short, escaped message, the server
 * stays up, no log line is forged or cut short by a stack trace, and nothing is created, mounted or formatted
 * outside the kubelet root, nor any device formatted. The generator is seeded, so a failure repeats.
 */
@Tag("host")
class HostileInputHostTest {

    private static final int REQUESTS = 480;
    private static final Set<Status.Code> BAD_INPUT_CODES = Set.of(Status.Code.INVALID_ARGUMENT,
            Status.Code.NOT_FOUND, Status.Code.FAILED_PRECONDITION, Status.Code.ALREADY_EXISTS,
            Status.Code.OUT_OF_RANGE);

    private final HostileInput hostile = new HostileInput(20261122);

    @Test
    void malformedRequestsGetSpecCodesAndTouchNothing() throws Exception {
        Path outside = Files.createTempDirectory("bn-hostile-outside-");
        LogCapture log = LogCapture.installed();
        try (log; PluginHarness plugin = PluginHarness.start()) {
            LoopDevice bait = plugin.newLoopDevice("bait", 64L << 20);
            Path root = plugin.kubeletRoot();
            Files.createDirectories(root.resolve("plugins"));
            Files.createSymbolicLink(root.resolve("plugins/escape"), outside);
            long[] baitStat = LinuxNative.stat(bait.device().toString());
            DeviceNumber baitNumber = new DeviceNumber(baitStat[LinuxNative.STAT_RDEV_MAJOR],
                    baitStat[LinuxNative.STAT_RDEV_MINOR]);
            // Only the mounts this test's requests could have made: other jobs on the machine mount too.
            List<MountEntry> mountsBefore = mountsOf(root, outside, baitNumber);

            Map<Status.Code, Integer> codes = new EnumMap<>(Status.Code.class);
            var node = plugin.client().node();
            for (int i = 0; i < REQUESTS; i++) {
                int kind = hostile.nextInt(8);
                Status.Code code = Status.Code.OK;
                try {
                    switch (kind) {
                        case 0 -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setStagingTargetPath(hostile.path(root, outside))
                                .setVolumeCapability(hostile.capability())
                                .putAllVolumeContext(hostile.context(bait.device()))
                                .putAllSecrets(hostile.secrets()).build());
                        case 1 -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setStagingTargetPath(hostile.path(root, outside))
                                .build());
                        case 2 -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setStagingTargetPath(hostile.path(root, outside))
                                .setTargetPath(hostile.path(root, outside)).setVolumeCapability(hostile.capability())
                                .setReadonly(hostile.nextBoolean())
                                .putAllVolumeContext(hostile.context(bait.device())).build());
                        case 3 -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setTargetPath(hostile.path(root, outside)).build());
                        case 4 -> node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setVolumePath(hostile.path(root, outside)).build());
                        case 5 -> node.nodeGetVolumeHealth(NodeGetVolumeHealthRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setVolumePublishPath(hostile.path(root, outside))
                                .setStagingTargetPath(hostile.path(root, outside)).build());
                        case 6 -> node.nodeGetStorageHealth(NodeGetStorageHealthRequest.newBuilder()
                                .putAllSecrets(hostile.secrets()).build());
                        default -> node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
                                .setVolumeId(hostile.volumeId()).setVolumePath(hostile.path(root, outside))
                                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(hostile.nextLong())
                                        .setLimitBytes(hostile.nextLong())).build());
                    }
                } catch (StatusRuntimeException e) {
                    code = e.getStatus().getCode();
                    assertTrue(BAD_INPUT_CODES.contains(code), "request " + i + " (kind " + kind + ") got " + code
                            + ": " + e.getStatus().getDescription());
                    HostileInput.assertShortAndEscaped(e.getStatus().getDescription());
                }
                codes.merge(code, 1, Integer::sum);
            }

            assertTrue(plugin.client().identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue(),
                    "the server is still up");
            assertEquals(REQUESTS, codes.values().stream().mapToInt(Integer::intValue).sum());
            assertTrue(codes.getOrDefault(Status.Code.INVALID_ARGUMENT, 0) > REQUESTS / 2, codes.toString());
            try (Stream<Path> entries = Files.list(outside)) {
                assertEquals(List.of(), entries.toList(), "nothing created outside the kubelet root");
            }
            assertEquals(mountsBefore, mountsOf(root, outside, baitNumber),
                    "no mount added or removed under the kubelet root, outside it, or of the bait device");
            byte[] head = new byte[1 << 16];
            try (var in = new java.io.RandomAccessFile(bait.device().toFile(), "r")) {
                in.readFully(head);
            }
            assertTrue(java.util.Arrays.equals(new byte[head.length], head), "the bait device was never formatted");
            HostileInput.assertNoForgedOrSevereLine(log.written());
            System.out.println("hostile input: " + REQUESTS + " requests, codes " + codes);
        } finally {
            Files.deleteIfExists(outside);
        }
    }

    /** Mounts under either directory (symlinks resolved) or of the device. */
    private static List<MountEntry> mountsOf(Path root, Path outside, DeviceNumber device) throws IOException {
        Path realRoot = root.toRealPath();
        Path realOutside = outside.toRealPath();
        return MountTable.read(Path.of("/proc/self/mountinfo")).stream()
                .filter(m -> m.mountPoint().startsWith(realRoot) || m.mountPoint().startsWith(root)
                        || m.mountPoint().startsWith(realOutside) || m.device().equals(device))
                .toList();
    }
}
