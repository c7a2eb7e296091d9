package dev.blocknode.testing;

import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.logging.LogCapture;
import dev.blocknode.logging.Printable;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fields a hostile caller sends, for the tests that throw them at a service over its socket: missing and
 * random values, huge strings, NUL bytes, newlines and other control characters, a forged log line, relative
 * paths, "..", symlinks out of the kubelet root, unknown fs types and access modes, forged mount options,
 * oversized ids, contexts, secrets and mount flags. Seeded, so a failure repeats. Also what every answer to
 * them must be: a short, escaped status message, and a log with no forged or SEVERE line.
 */
public final class HostileInput {

    public static final String FORGED_LINE = "\n2026-01-01T00:00:00.000Z SEVERE rpc: forged";

    private final Random random;

    public HostileInput(long seed) {
        this.random = new Random(seed);
    }

    public int nextInt(int bound) {
        return random.nextInt(bound);
    }

    public boolean nextBoolean() {
        return random.nextBoolean();
    }

    public long nextLong() {
        return random.nextLong();
    }

    public String volumeId() {
        return pick(() -> "", () -> "vol-" + random.nextInt(5), () -> "a".repeat(2000 + random.nextInt(5000)),
                () -> "nul\0byte", () -> "../../etc", () -> "vol\nnewline", this::text,
                () -> "卷-" + random.nextInt(9), () -> "vol" + FORGED_LINE, () -> "v\r\u2028\u202e\u001b[2J",
                () -> "b".repeat(129), () -> "卷".repeat(43));
    }

    /** A node id: the same hostile shapes as a volume id, plus the spec's 256-byte limit either side. */
    public String nodeId() {
        return pick(this::volumeId, () -> "n".repeat(256), () -> "n".repeat(257), () -> "node-" + random.nextInt(3));
    }

    public String path(Path root, Path outside) {
        return pick(() -> "", () -> "relative/path", () -> root + "/plugins/../../../etc",
                () -> root + "/plugins/./x", () -> outside.toString(), () -> outside + "/target",
                () -> root + "/plugins/escape/globalmount", () -> root + "/plugins/escape",
                () -> root + "/nul\0/x", () -> "/" + "d/".repeat(3000), () -> root.toString(),
                () -> "/etc", () -> "/proc/self", () -> root + "/pods/p/" + text(), () -> "/dev/../etc/shadow",
                () -> root + "/plugins/x" + FORGED_LINE, () -> root + "/pods/p\u0085/mount",
                () -> root + "/pods/" + "p".repeat(5000));
    }

    public VolumeCapability capability() {
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

    /** A volume context; {@code bait} is a real device the request must never format or mount. */
    public Map<String, String> context(Path bait) {
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

    public Map<String, String> secrets() {
        return pick(() -> Map.of(text(), text()), () -> Map.of("node.session.auth.password", "p".repeat(70_000)),
                () -> Map.of("user" + FORGED_LINE, "x"), Map::of, this::manySecrets);
    }

    /** 1,000 keys, past the 256 entries and 64 KiB a map may hold, small enough to share a request. */
    private Map<String, String> manySecrets() {
        Map<String, String> secrets = new HashMap<>();
        for (int i = 0; i < 1000; i++) {
            secrets.put("secret" + i, "s".repeat(90));
        }
        return secrets;
    }

    /** Up to 40 characters, half printable ASCII, half anything below U+3000 (controls, C1, bidi, CJK). */
    public String text() {
        StringBuilder s = new StringBuilder();
        int length = random.nextInt(40);
        for (int i = 0; i < length; i++) {
            s.append((char) (random.nextBoolean() ? 32 + random.nextInt(95) : random.nextInt(0x3000)));
        }
        return s.toString();
    }

    @SafeVarargs
    public final <T> T pick(Supplier<T>... choices) {
        return choices[random.nextInt(choices.length)].get();
    }

    /** 20,000 keys, 3.3 MiB: was once accepted and written into the staging record. */
    private Map<String, String> hugeContext() {
        Map<String, String> context = new HashMap<>();
        for (int i = 0; i < 20_000; i++) {
            context.put("key" + i, "v".repeat(160));
        }
        return context;
    }

    private List<String> thousandsOfMountFlags() {
        return IntStream.range(0, 3000).mapToObj(i -> "unknownoption" + i).toList();
    }

    /** A status message fits gRPC clients (C-core: 16 KiB) with room to spare, and holds no control. */
    public static void assertShortAndEscaped(String description) {
        assertTrue(description.length() <= Printable.STATUS_MESSAGE_LIMIT + 64, () -> "a status message of "
                + description.length() + " characters: " + description.substring(0, 200));
        assertFalse(Printable.hasUnprintable(description), description);
    }

    /** Each record is one line (a trace adds only indented ones), and none was unexpected (SEVERE). */
    public static void assertNoForgedOrSevereLine(List<LogCapture.Written> written) {
        for (LogCapture.Written record : written) {
            assertFalse(record.level().equals(Level.SEVERE), record.text());
            String[] lines = record.text().split("\n");
            assertTrue(lines.length == 1 || record.withTrace(), "a record written as several lines: " + record.text());
            for (int i = 0; i < lines.length; i++) {
                assertFalse(Printable.hasUnprintable(lines[i]), lines[i]);
                assertTrue(i == 0 || lines[i].startsWith("  "), "a trace line not indented: " + lines[i]);
            }
        }
    }
}
