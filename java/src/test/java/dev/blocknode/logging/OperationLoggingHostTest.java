package dev.blocknode.logging;

import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every line an operation logs carries its RPC, request id and volume id; secrets never reach a line. */
@Tag("host")
class OperationLoggingHostTest {

    /**
     * Formats records on the logging thread, as the console handler does, in both formats; listens on the
     * root logger from {@link #installed} until closed.
     */
    private static final class Capture extends Handler implements AutoCloseable {
        final List<String> json = new ArrayList<>();
        final List<String> text = new ArrayList<>();
        final LogSetup.JsonFormatter jsonFormatter = new LogSetup.JsonFormatter();
        final LogSetup.TextFormatter textFormatter = new LogSetup.TextFormatter();

        @Override
        public synchronized void publish(LogRecord record) {
            json.add(jsonFormatter.format(record));
            text.add(textFormatter.format(record));
        }

        @Override
        public void flush() {
        }

        static Capture installed() {
            Capture capture = new Capture();
            capture.setLevel(Level.ALL);
            Logger.getLogger("").addHandler(capture);
            return capture;
        }

        /** Stops listening. */
        @Override
        public void close() {
            Logger.getLogger("").removeHandler(this);
        }

        synchronized List<String> jsonLines() {
            return List.copyOf(json);
        }

        synchronized List<String> textLines() {
            return List.copyOf(text);
        }
    }

    @Test
    void linesCarryTheOperationAndNeverASecret() throws Exception {
        Capture capture = Capture.installed();
        try (capture; PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("logged", 64L << 20);
            Path staging = plugin.stagingPath("logged");
            plugin.client().node().nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                    .setVolumeId("vol-logged")
                    .setStagingTargetPath(staging.toString())
                    .setVolumeCapability(mount("ext4"))
                    .putVolumeContext("devicePath", loop.device().toString())
                    .putSecrets("node.session.auth.password", "S3CRET-VALUE-42")
                    .build());
            plugin.client().node().nodeUnstageVolume(unstage("vol-logged", staging));
        }
        List<String> staged = capture.json.stream().filter(l -> l.contains("staged volume vol-logged")).toList();
        assertFalse(staged.isEmpty(), "the stager logged: " + capture.json);
        assertTrue(staged.get(0).contains("\"rpc\":\"NodeStageVolume\"") && staged.get(0).contains("\"request_id\":")
                && staged.get(0).contains("\"volume_id\":\"vol-logged\""), staged.get(0));
        assertTrue(capture.text.stream().anyMatch(l -> l.contains("[NodeStageVolume #") && l.contains(" vol-logged]")
                && l.contains("formatted blank device")), capture.text.toString());
        for (String line : capture.json) {
            assertFalse(line.contains("S3CRET-VALUE-42"), "a secret reached the log: " + line);
        }
    }

    @Test
    void aPublishAndAnUnpublishAreOneLineEachSayingWhatTheyDid() throws Exception {
        try (Capture capture = Capture.installed(); PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("one-line", 64L << 20);
            Path staging = plugin.stagingPath("one-line");
            Path target = plugin.targetPath("pod-1", "one-line");
            plugin.client().node().nodeStageVolume(stage("vol-one", loop.device(), staging, mount("ext4")));
            int before = capture.jsonLines().size();
            plugin.client().node().nodePublishVolume(publish("vol-one", staging, target, mount("ext4"), false));
            plugin.client().node().nodeUnpublishVolume(unpublish("vol-one", target));
            List<String> all = capture.jsonLines();
            List<String> lines = all.subList(before, all.size());
            plugin.client().node().nodeUnstageVolume(unstage("vol-one", staging));

            assertEquals(2, lines.size(), "one line per call: " + lines);
            assertTrue(lines.get(0).contains("NodePublishVolume #") && lines.get(0).contains(" OK in ")
                    && lines.get(0).contains(" us: published volume vol-one at " + target)
                    && lines.get(0).contains("\"rpc\":\"NodePublishVolume\"")
                    && lines.get(0).contains("\"volume_id\":\"vol-one\""), lines.get(0));
            assertTrue(lines.get(1).contains("NodeUnpublishVolume #")
                    && lines.get(1).contains(" us: unpublished volume vol-one from " + target), lines.get(1));
        }
    }

    /**
     * A newline in a devicePath (echoed in a NOT_FOUND message) or in a volume_id (in
     * "formatted blank device ... of volume <id>", "staged volume <id>") wrote a raw line break, so a caller
     * could append a whole forged line. Now both are refused, and nothing the calls log starts a line.
     */
    @Test
    void aCallerCannotForgeALogLine() throws Exception {
        String forged = "\n2026-01-01T00:00:00.000Z SEVERE rpc: forged";
        try (Capture capture = Capture.installed(); PluginHarness plugin = PluginHarness.start()) {
            LoopDevice loop = plugin.newLoopDevice("forged", 64L << 20);
            Path staging = plugin.stagingPath("forged");
            var node = plugin.client().node();
            StatusRuntimeException byDevice = assertThrows(StatusRuntimeException.class, () -> node.nodeStageVolume(
                    stage("vol-forged", Path.of("/dev/blocknode-absent" + forged), staging, mount("ext4"))));
            StatusRuntimeException byId = assertThrows(StatusRuntimeException.class, () -> node.nodeStageVolume(
                    stage("vol" + forged, loop.device(), staging, mount("ext4"))));

            assertEquals(Status.Code.INVALID_ARGUMENT, byDevice.getStatus().getCode(), byDevice.getMessage());
            assertEquals(Status.Code.INVALID_ARGUMENT, byId.getStatus().getCode(), byId.getMessage());
            assertFalse(LinuxNative.isMountPoint(staging.toString()), "nothing was staged");
            List<String> text = capture.textLines();
            assertFalse(text.isEmpty(), "the refusals were logged");
            for (String record : text) {
                assertEquals(record.length() - 1, record.indexOf('\n'), "a record written as several lines: " + record);
            }
        }
    }
}
