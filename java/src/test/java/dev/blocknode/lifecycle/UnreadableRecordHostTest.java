package dev.blocknode.lifecycle;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetVolumeHealthRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.VolumeHealth;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.CrashScenario;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.PluginProcess;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

import static dev.blocknode.testing.CsiRequests.block;
import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One staging record that cannot be read affects its own volume only: the plugin starts, every other volume
 * stages and tears down, the bad volume's calls are refused FAILED_PRECONDITION naming the file, and it is
 * reported. A record file that is a FIFO or a symlink to /dev/zero does not hang or kill the start: each
 * PluginProcess.start below is bounded (it fails when the socket is not served within 30 s, or the process ends).
 */
@Tag("host")
class UnreadableRecordHostTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void aTruncatedRecordRefusesItsVolumeOnlyAndTheOthersStageAndTearDown() throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            Path file = stageBothAndStop(scenario);
            byte[] bytes = Files.readAllBytes(file);
            Files.write(file, Arrays.copyOf(bytes, bytes.length - 3));
            oneBadVolume(scenario, file, "corrupt");
        }
    }

    @Test
    void aRecordOfANewerFormatRefusesItsVolumeOnlySayingWhatToDo() throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            Path file = stageBothAndStop(scenario);
            byte[] bytes = Files.readAllBytes(file);
            StagingRecord record = StagingRecord.parseFrom(Arrays.copyOfRange(bytes, 8, bytes.length));
            Files.write(file, encode(record.toBuilder().setFormatVersion(2).build()));
            String message = oneBadVolume(scenario, file, "format version 2");
            assertTrue(message.contains("written by a newer blocknode") && message.contains("upgrade the plugin again")
                    && message.contains("tear the volume down with the newer plugin"), message);
        }
    }

    /**
     * Each alone: a FIFO named like a record hung the start for ever without a line (Files.readAllBytes waits for
     * a writer); a symlink to /dev/zero ended it with an OutOfMemoryError.
     */
    @ParameterizedTest
    @ValueSource(strings = {"fifo", "zero"})
    void aFifoOrASymlinkToDevZeroNamedLikeARecordNeitherHangsNorKillsTheStart(String kind) throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            try (PluginProcess plugin = PluginProcess.start(scenario.dir(), Map.of())) {
                plugin.client().node().nodeStageVolume(stage(CrashScenario.BLOCK, scenario.blockDevice(),
                        scenario.blockStaging(), block()));
            }
            String ghost = "ghost-" + kind;
            Path file = scenario.dir().resolve("state/volumes").resolve(fileName(ghost));
            String why;
            if (kind.equals("fifo")) {
                new ProcessCommandRunner().runChecked(Command.of("mkfifo", file.toString()));
                why = file + " is a FIFO, not a regular file";
            } else {
                Files.createSymbolicLink(file, Path.of("/dev/zero"));
                why = file + " is a symbolic link";
            }

            try (PluginProcess plugin = PluginProcess.start(scenario.dir(), Map.of())) {
                plugin.awaitLine(line -> line.contains(why), WAIT);
                plugin.awaitLine(line -> line.contains("1 record file(s) cannot be read"), WAIT);
                CsiClient client = plugin.client();
                assertRefused(why, () -> client.node().nodeStageVolume(stage(ghost, scenario.fsDevice(),
                        scenario.fsStaging(), mount("xfs"))));
                assertRefused(why, () -> client.node().nodeUnstageVolume(unstage(ghost, scenario.fsStaging())));
                client.node().nodeUnstageVolume(unstage(CrashScenario.BLOCK, scenario.blockStaging()));
                client.node().nodeStageVolume(stage(CrashScenario.BLOCK, scenario.blockDevice(),
                        scenario.blockStaging(), block()));
                client.node().nodeUnstageVolume(unstage(CrashScenario.BLOCK, scenario.blockStaging()));
            }
            HostAssertions.assertNoMountsUnder(scenario.dir());
        }
    }

    /** Stages the fs volume (the one made bad) and the block volume, stops the plugin; the fs record's file. */
    private static Path stageBothAndStop(CrashScenario scenario) throws Exception {
        try (PluginProcess plugin = PluginProcess.start(scenario.dir(), Map.of())) {
            plugin.client().node().nodeStageVolume(stage(CrashScenario.FS, scenario.fsDevice(), scenario.fsStaging(),
                    mount("xfs")));
            plugin.client().node().nodeStageVolume(stage(CrashScenario.BLOCK, scenario.blockDevice(),
                    scenario.blockStaging(), block()));
        }
        Path file = scenario.dir().resolve("state/volumes").resolve(fileName(CrashScenario.FS));
        assertTrue(Files.isRegularFile(file), file.toString());
        return file;
    }

    /**
     * With the fs volume's record bad: the plugin starts and names the file, the block volume tears down and
     * stages again, every call for the fs volume is refused naming the file (its health says so), and once the
     * file is removed the fs volume is torn down from what is mounted. Returns the refusal's message.
     */
    private static String oneBadVolume(CrashScenario scenario, Path file, String why) throws Exception {
        String refusal;
        int port;
        try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        try (PluginProcess plugin = PluginProcess.start(scenario.dir(), Map.of(),
                List.of("--metrics-address", "127.0.0.1:" + port))) {
            plugin.awaitLine(line -> line.contains("staging record " + file) && line.contains(why), WAIT);
            CsiClient client = plugin.client();
            assertTrue(scrape(port).lines().anyMatch(l -> l.equals("blocknode_unreadable_staging_records 1.0")),
                    "the gauge counts the bad record");

            client.node().nodeUnstageVolume(unstage(CrashScenario.BLOCK, scenario.blockStaging()));
            client.node().nodeStageVolume(stage(CrashScenario.BLOCK, scenario.blockDevice(), scenario.blockStaging(),
                    block()));
            client.node().nodeUnstageVolume(unstage(CrashScenario.BLOCK, scenario.blockStaging()));

            String f = file.toString();
            refusal = assertRefused(f, () -> client.node().nodeStageVolume(stage(CrashScenario.FS,
                    scenario.fsDevice(), scenario.fsStaging(), mount("xfs"))));
            assertTrue(refusal.contains(why), refusal);
            assertRefused(f, () -> client.node().nodeUnstageVolume(unstage(CrashScenario.FS, scenario.fsStaging())));
            assertRefused(f, () -> client.node().nodePublishVolume(publish(CrashScenario.FS, scenario.fsStaging(),
                    scenario.fsTarget(), mount("xfs"), false)));
            assertRefused(f, () -> client.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                    .setVolumeId(CrashScenario.FS).setVolumePath(scenario.fsStaging().toString()).build()));
            assertRefused(f, () -> client.node().nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
                    .setVolumeId(CrashScenario.FS).setVolumePath(scenario.fsStaging().toString()).build()));
            VolumeHealth health = client.node().nodeGetVolumeHealth(NodeGetVolumeHealthRequest.newBuilder()
                    .setVolumeId(CrashScenario.FS).build()).getVolumeHealth();
            assertEquals(1, health.getHealthStatusesCount(), health.toString());
            assertEquals("RecordUnreadable", health.getHealthStatuses(0).getReason());
            assertTrue(health.getHealthStatuses(0).getMessage().contains(f), health.toString());

            // The operator's way out: remove the file; the volume's teardown rebuilds its record from the mount.
            Files.delete(file);
            assertTrue(scrape(port).lines().anyMatch(l -> l.equals("blocknode_unreadable_staging_records 0.0")),
                    "a removed file counts no more (read again before each scrape)");
            client.node().nodeUnstageVolume(unstage(CrashScenario.FS, scenario.fsStaging()));
        }
        HostAssertions.assertNoMountsUnder(scenario.dir());
        assertFalse(Files.exists(file));
        return refusal;
    }

    private static String scrape(int port) throws Exception {
        try (HttpClient http = HttpClient.newHttpClient()) {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        }
    }

    private static String assertRefused(String file, Executable call) {
        StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, call);
        assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getStatus().toString());
        String message = refused.getStatus().getDescription();
        assertTrue(message != null && message.contains(file), message);
        return message;
    }

    /** A record file as RecordCodec writes one: magic, CRC32C of the payload, the payload. */
    private static byte[] encode(StagingRecord record) {
        byte[] payload = record.toByteArray();
        CRC32C crc = new CRC32C();
        crc.update(payload);
        return ByteBuffer.allocate(8 + payload.length).put("bnr1".getBytes(StandardCharsets.US_ASCII))
                .putInt((int) crc.getValue()).put(payload).array();
    }

    private static String fileName(String volumeId) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                .digest(volumeId.getBytes(StandardCharsets.UTF_8))) + ".pb";
    }
}
