package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.csi.v1.CapacityRange;
import dev.blocknode.logging.LogCapture;
import dev.blocknode.logging.Printable;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountTable;
import dev.blocknode.os.natives.LinuxNative;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile input: hundreds of malformed requests (missing and random fields, huge strings, NUL bytes,
 * newlines and other control characters, relative paths, "..", symlinks out of the kubelet root, unknown fs
 * types and access modes, forged mount options, oversized ids, contexts, secrets and mount flags,
 * contradictory capabilities). Each gets a spec code for bad input with a short, escaped message, the server
 * stays up, no log line is forged or cut short by a stack trace, and nothing is created, mounted or formatted
 * outside the kubelet root, nor any device formatted. The generator is seeded, so a failure repeats.
 */
@Tag("host")
class HostileInputHostTest {

    private static final int REQUESTS = 400;
    private static final String FORGED_LINE = "\n2026-01-01T00:00:00.000Z SEVERE rpc: forged";
    private static final Set<Status.Code> BAD_INPUT_CODES = Set.of(Status.Code.INVALID_ARGUMENT,
            Status.Code.NOT_FOUND, Status.Code.FAILED_PRECONDITION, Status.Code.ALREADY_EXISTS,
            Status.Code.OUT_OF_RANGE);

    private final Random random = new Random(20261122);

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
                int kind = random.nextInt(6);
                Status.Code code = Status.Code.OK;
                try {
                    switch (kind) {
                        case 0 -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                                .setVolumeId(volumeId()).setStagingTargetPath(path(root, outside))
                                .setVolumeCapability(capability()).putAllVolumeContext(context(bait.device()))
                                .putAllSecrets(secrets()).build());
                        case 1 -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                                .setVolumeId(volumeId()).setStagingTargetPath(path(root, outside)).build());
                        case 2 -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                                .setVolumeId(volumeId()).setStagingTargetPath(path(root, outside))
                                .setTargetPath(path(root, outside)).setVolumeCapability(capability())
                                .setReadonly(random.nextBoolean()).putAllVolumeContext(context(bait.device())).build());
                        case 3 -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                                .setVolumeId(volumeId()).setTargetPath(path(root, outside)).build());
                        case 4 -> node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                                .setVolumeId(volumeId()).setVolumePath(path(root, outside)).build());
                        default -> node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
                                .setVolumeId(volumeId()).setVolumePath(path(root, outside))
                                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(random.nextLong())
                                        .setLimitBytes(random.nextLong())).build());
                    }
                } catch (StatusRuntimeException e) {
                    code = e.getStatus().getCode();
                    assertTrue(BAD_INPUT_CODES.contains(code), "request " + i + " (kind " + kind + ") got " + code
                            + ": " + e.getStatus().getDescription());
                    assertShortAndEscaped(e.getStatus().getDescription());
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
            assertNoForgedOrSevereLine(log.written());
            System.out.println("hostile input: " + REQUESTS + " requests, codes " + codes);
        } finally {
            Files.deleteIfExists(outside);
        }
    }

    /** A status message fits gRPC clients (C-core: 16 KiB) with room to spare, and holds no control. */
    private static void assertShortAndEscaped(String description) {
        assertTrue(description.length() <= Printable.STATUS_MESSAGE_LIMIT + 64, () -> "a status message of "
                + description.length() + " characters: " + description.substring(0, 200));
        assertFalse(Printable.hasUnprintable(description), description);
    }

    /** Each record is one line (a trace adds only indented ones), and none was unexpected (SEVERE). */
    private static void assertNoForgedOrSevereLine(List<LogCapture.Written> written) {
        for (LogCapture.Written record : written) {
            assertFalse(record.level().equals(java.util.logging.Level.SEVERE), record.text());
            String[] lines = record.text().split("\n");
            assertTrue(lines.length == 1 || record.withTrace(), "a record written as several lines: " + record.text());
            for (int i = 0; i < lines.length; i++) {
                assertFalse(Printable.hasUnprintable(lines[i]), lines[i]);
                assertTrue(i == 0 || lines[i].startsWith("  "), "a trace line not indented: " + lines[i]);
            }
        }
    }

    private String volumeId() {
        return pick(() -> "", () -> "vol-" + random.nextInt(5), () -> "a".repeat(2000 + random.nextInt(5000)),
                () -> "nul\0byte", () -> "../../etc", () -> "vol\nnewline", this::text,
                () -> "卷-" + random.nextInt(9), () -> "vol" + FORGED_LINE, () -> "v\r\u2028\u202e\u001b[2J", () -> "b".repeat(129),
                () -> "卷".repeat(43));
    }

    private String path(Path root, Path outside) {
        return pick(() -> "", () -> "relative/path", () -> root + "/plugins/../../../etc",
                () -> root + "/plugins/./x", () -> outside.toString(), () -> outside + "/target",
                () -> root + "/plugins/escape/globalmount", () -> root + "/plugins/escape",
                () -> root + "/nul\0/x", () -> "/" + "d/".repeat(3000), () -> root.toString(),
                () -> "/etc", () -> "/proc/self", () -> root + "/pods/p/" + text(), () -> "/dev/../etc/shadow",
                () -> root + "/plugins/x" + FORGED_LINE, () -> root + "/pods/p\u0085/mount",
                () -> root + "/pods/" + "p".repeat(5000));
    }

    private VolumeCapability capability() {
        VolumeCapability.Builder cap = VolumeCapability.newBuilder();
        switch (random.nextInt(5)) {
            case 0 -> { } // neither access type nor mode
            case 1 -> cap.setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                    .setAccessMode(VolumeCapability.AccessMode.newBuilder().setModeValue(random.nextInt(40) - 5));
            case 2 -> cap.setMount(VolumeCapability.MountVolume.newBuilder()
                    .setFsType(pick(() -> "ntfs", () -> "ext4;rm -rf /", () -> "", () -> "xfs\0", this::text))
                    .addAllMountFlags(pick(() -> List.of("bind"), () -> List.of("remount"), () -> List.of("ro nodev"),
                            () -> List.of("x-mount.mkdir"), () -> List.of("shared"), () -> List.of("\u0001"),
                            () -> List.of("noatime"), () -> List.of("nosuid;x"), () -> List.of("a" + FORGED_LINE),
                            this::thousandsOfMountFlags)))
                    .setAccessMode(VolumeCapability.AccessMode.newBuilder().setModeValue(random.nextInt(9)));
            case 3 -> cap.setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4")
                    .setVolumeMountGroup("1000"))
                    .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                            .setMode(VolumeCapability.AccessMode.Mode.MULTI_NODE_MULTI_WRITER));
            default -> cap.setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"));
        }
        return cap.build();
    }

    private Map<String, String> context(Path bait) {
        return pick(Map::of, () -> Map.of("devicePath", "/etc/passwd"), () -> Map.of("devicePath", "relative"),
                () -> Map.of("devicePath", "/dev/null"), () -> Map.of("devicePath", bait.toString(),
                        "wwid", "naa.6001405" + "0".repeat(25)),
                () -> Map.of("transport", text()), () -> Map.of("iqn", "not-an-iqn", "targetPortal", "x:y", "lun", "-1"),
                () -> Map.of("targetWWNs", "zz", "lun", "1"), () -> Map.of("devicePath", "/dev/../etc/passwd"),
                () -> Map.of("devicePath", bait.toString(), "iqn", "iqn.2003-01.org.x:y"),
                () -> Map.of("devicePath", bait + "\0"), () -> Map.of("devicePath", "/dev/absent" + FORGED_LINE),
                () -> Map.of("devicePath" + FORGED_LINE, bait.toString()), () -> Map.of("targetPortal", "\0"),
                this::hugeContext);
    }

    /** 20,000 keys, 3.3 MiB: was accepted and written into the staging record. */
    private Map<String, String> hugeContext() {
        Map<String, String> context = new HashMap<>();
        for (int i = 0; i < 20_000; i++) {
            context.put("key" + i, "v".repeat(160));
        }
        return context;
    }

    private List<String> thousandsOfMountFlags() {
        return java.util.stream.IntStream.range(0, 3000).mapToObj(i -> "unknownoption" + i).toList();
    }

    private Map<String, String> secrets() {
        return pick(() -> Map.of(text(), text()), () -> Map.of("node.session.auth.password", "p".repeat(70_000)),
                () -> Map.of("user" + FORGED_LINE, "x"));
    }

    private String text() {
        StringBuilder s = new StringBuilder();
        int length = random.nextInt(40);
        for (int i = 0; i < length; i++) {
            s.append((char) (random.nextBoolean() ? 32 + random.nextInt(95) : random.nextInt(0x3000)));
        }
        return s.toString();
    }

    @SafeVarargs
    private <T> T pick(Supplier<T>... choices) {
        return choices[random.nextInt(choices.length)].get();
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
