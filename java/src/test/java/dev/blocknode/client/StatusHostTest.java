package dev.blocknode.client;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.CrashScenario;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.PluginProcess;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static dev.blocknode.testing.CsiRequests.block;
import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code blocknode status} as an operator runs it: a filesystem and a block loop volume staged and published through the real plugin (its
 * own process), the plugin stopped, then {@code status} run as a process of its own (the jar's {@code Main}): the
 * healthy volume (exit 0) in text and JSON, then a publication unmounted by hand (exit 1, PublicationMissing); the
 * state directory is the same before and after every run. The volume is torn down through a restarted plugin.
 */
@Tag("host")
class StatusHostTest {

    private static final String FS = CrashScenario.FS;
    private static final String BLOCK = CrashScenario.BLOCK;

    private record Run(int code, String out) {
    }

    @Test
    void statusOfAStoppedPluginsVolumeAndOfAPublicationUnmountedByHand() throws Exception {
        try (CrashScenario scenario = CrashScenario.create()) {
            Path dir = scenario.dir();
            Path state = dir.resolve("state");
            try (PluginProcess plugin = PluginProcess.start(dir, Map.of())) {
                var node = plugin.client().node();
                node.nodeStageVolume(stage(FS, scenario.fsDevice(), scenario.fsStaging(), mount("ext4")));
                node.nodePublishVolume(publish(FS, scenario.fsStaging(), scenario.fsTarget(), mount("ext4"), false));
                node.nodeStageVolume(stage(BLOCK, scenario.blockDevice(), scenario.blockStaging(), block()));
                node.nodePublishVolume(publish(BLOCK, scenario.blockStaging(), scenario.blockTarget(), block(), false));
            } // SIGTERM: the plugin is down, its mounts stay
            Map<String, String> before = listing(state);

            Run text = status(dir);
            assertEquals(0, text.code(), text.out());
            assertTrue(text.out().startsWith("no problems: 2 volume(s), all healthy\n"), text.out());
            assertTrue(text.out().contains(FS + "   STAGED  local      mount"), text.out());
            assertTrue(text.out().contains(FS + "   pod-a    rw    yes      " + scenario.fsTarget()), text.out());

            Run json = status(dir, "-o", "json");
            assertEquals(0, json.code(), json.out());
            assertTrue(json.out().startsWith("{\"schemaVersion\":1,\"healthy\":true,\"volumes\":["), json.out());
            assertTrue(json.out().contains("{\"volumeId\":\"" + FS + "\",\"phase\":\"STAGED\",\"transport\":\"local\",\"accessType\":\"mount\""), json.out());
            assertTrue(json.out().contains("\"present\":true},\"stagingPath\":\"" + scenario.fsStaging()
                    + "\",\"stagingMounted\":true"), json.out());
            assertTrue(json.out().contains("\"podUid\":\"pod-a\",\"mounted\":true"), json.out());
            assertTrue(json.out().endsWith("\"unreadableRecords\":[],\"unrecordedMounts\":[],\"sweepKept\":null}\n"), json.out());
            // A block volume: no staging mount to check; its publication is the device node bind-mounted (a stat of
            // the target says which device); this target is not in kubelet's layout, so no pod is named.
            assertTrue(json.out().contains("\"volumeId\":\"" + BLOCK + "\",\"phase\":\"STAGED\",\"transport\":\"local\","
                    + "\"accessType\":\"block\""), json.out());
            assertTrue(json.out().contains("\"stagingMounted\":null,\"paths\":null,\"publications\":[{\"target\":\""
                    + scenario.blockTarget() + "\",\"readOnly\":false,\"podUid\":null,\"mounted\":true}]"), json.out());

            LinuxNative.umount2(scenario.fsTarget().toString(), 0);
            Run broken = status(dir);
            assertEquals(1, broken.code(), broken.out());
            assertTrue(broken.out().startsWith("PROBLEMS\n"), broken.out());
            assertTrue(broken.out().contains("PublicationMissing  volume " + FS
                    + " is no longer mounted at its publication " + scenario.fsTarget()), broken.out());
            Run brokenJson = status(dir, "-o", "json", "--volume", FS);
            assertEquals(1, brokenJson.code(), brokenJson.out());
            assertTrue(brokenJson.out().contains("\"podUid\":\"pod-a\",\"mounted\":false"), brokenJson.out());
            assertEquals(3, status(dir, "--volume", "not-here").code());

            // The volume's filesystem mounted once more by hand, where no record says: what no record explains.
            Path extra = Files.createDirectories(dir.resolve("extra"));
            LinuxNative.mount(scenario.fsStaging().toString(), extra.toString(), null, LinuxNative.MS_BIND, null);
            try {
                Run unrecorded = status(dir, "-o", "json");
                assertEquals(1, unrecorded.code(), unrecorded.out());
                assertTrue(unrecorded.out().contains("\"unrecordedMounts\":[{\"mountPoint\":\"" + extra + "\","),
                        unrecorded.out());
                assertTrue(unrecorded.out().contains("\"volumeId\":\"" + FS + "\",\"message\":\"volume " + FS
                        + "'s device "), unrecorded.out());
            } finally {
                LinuxNative.umount2(extra.toString(), 0);
            }
            assertEquals(before, listing(state), "status changes nothing in the state directory");

            try (PluginProcess again = PluginProcess.start(dir, Map.of())) {
                var node = again.client().node();
                node.nodeUnpublishVolume(unpublish(FS, scenario.fsTarget()));
                node.nodeUnstageVolume(unstage(FS, scenario.fsStaging()));
                node.nodeUnpublishVolume(unpublish(BLOCK, scenario.blockTarget()));
                node.nodeUnstageVolume(unstage(BLOCK, scenario.blockStaging()));
            }
            HostAssertions.assertNoMountsUnder(dir);
        }
    }

    /** {@code status} in a JVM of its own, as {@code blocknode status} runs it. */
    private static Run status(Path dir, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:TieredStopAtLevel=1",
                "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), "dev.blocknode.Main", "status",
                "--state-dir", dir.resolve("state").toString(), "--kubelet-root", dir.resolve("kubelet").toString()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "status ends");
        return new Run(process.exitValue(), out);
    }

    /** Every path under {@code root}, with its size and modification time. */
    private static Map<String, String> listing(Path root) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> all = Files.walk(root)) {
            for (Path path : all.toList()) {
                BasicFileAttributes a = Files.readAttributes(path, BasicFileAttributes.class);
                out.put(root.relativize(path).toString(), a.size() + " " + a.lastModifiedTime().toMillis());
            }
        }
        return out;
    }
}
