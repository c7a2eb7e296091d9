package dev.blocknode.logging;

import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
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
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every line an operation logs carries its RPC, request id and volume id; secrets never reach a line. */
@Tag("host")
class OperationLoggingHostTest {

    /** Formats records on the logging thread, as the console handler does, in both formats. */
    private static final class Capture extends Handler {
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

        @Override
        public void close() {
        }
    }

    @Test
    void linesCarryTheOperationAndNeverASecret() throws Exception {
        Capture capture = new Capture();
        capture.setLevel(Level.ALL);
        Logger root = Logger.getLogger("");
        root.addHandler(capture);
        try (PluginHarness plugin = PluginHarness.start()) {
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
        } finally {
            root.removeHandler(capture);
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
}
