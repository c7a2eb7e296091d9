package dev.blocknode.client;

import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeLibrary;
import dev.blocknode.testing.PluginHarness;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code blocknode doctor} on this machine, as an operator runs it: a JVM of its own (the jar's {@code Main}), the
 * machine's own /sys, /proc and /etc and its tools. A transport this machine does not have is "not set up"; the
 * kernel features the plugin uses are there; a kubelet root on a shared mount passes and one on a private mount
 * fails; the exit code is the worst finding's. And the plugin runs the same checks at start and exports them.
 */
@Tag("host")
class DoctorHostTest {

    @TempDir
    Path temp;

    private record Run(int code, String out) {
    }

    @Test
    void theMachinesOwnReadiness() throws Exception {
        Run text = doctor();
        Run json = doctor("-o", "json");
        String worst = json.out().substring(json.out().indexOf("\"worst\":\"") + 9).split("\"", 2)[0];
        assertEquals(Map.of("ok", 0, "warning", 1, "error", 2).get(worst), json.code(), json.out());
        assertEquals(json.code(), text.code(), "one verdict in both forms");
        assertTrue(json.out().startsWith("{\"schemaVersion\":1,"), json.out());
        assertTrue(json.out().contains("{\"transport\":\"kernel\",\"setUp\":true,\"notSetUp\":null,\"worst\":\"ok\""),
                "openat2, mount_setattr, the uevent socket and the native library are all there:\n" + text.out());
        for (String check : List.of("native-library", "openat2", "mount-setattr", "uevent-socket")) {
            assertTrue(text.out().contains("  ok       " + check), check + " in\n" + text.out());
        }
        if (!hasAny(Path.of("/sys/class/fc_host"))) {
            assertTrue(text.out().contains("\nfc: not set up (no Fibre Channel HBA"), text.out());
        }
        if (!Files.exists(Path.of("/etc/nvme/hostnqn")) && !Files.exists(Path.of("/etc/nvme/hostid"))
                && !Files.exists(Path.of("/sys/module/nvme_fabrics")) && !Files.exists(Path.of("/sys/module/nvme_tcp"))) {
            assertTrue(text.out().contains("\nnvme-tcp: not set up ("), text.out());
        }
        String sockets = Files.readString(Path.of("/proc/net/unix"));
        if (!Files.exists(Path.of("/etc/iscsi/initiatorname.iscsi")) && !sockets.contains("@ISCSIADM_ABSTRACT_NAMESPACE")) {
            assertTrue(text.out().contains("\niscsi: not set up ("), text.out());
        } else if (!sockets.contains("@ISCSIADM_ABSTRACT_NAMESPACE")) {
            assertTrue(row(text.out(), "iscsid").startsWith("ERROR "), "a name without a daemon:\n" + text.out());
        }
        if (!sockets.contains("@/org/kernel/linux/storage/multipathd") && !Files.exists(Path.of("/etc/multipath/wwids"))
                && (!Files.exists(Path.of("/etc/multipath.conf")) || Files.readString(Path.of("/etc/multipath.conf")).isBlank())) {
            assertTrue(text.out().contains("\nmultipath: not set up ("), text.out());
        }
        System.out.println(text.out());
    }

    @Test
    void aKubeletRootMustBeOnASharedMount() throws Exception {
        NativeLibrary.load();
        Path mount = Files.createDirectories(temp.resolve("kubelet"));
        LinuxNative.mount("doctor-kubelet", mount.toString(), "tmpfs", 0, "size=1m");
        try {
            Path root = Files.createDirectories(mount.resolve("root"));
            LinuxNative.mount(null, mount.toString(), null, LinuxNative.MS_PRIVATE, null);
            Run onPrivate = doctor("--kubelet-root", root.toString());
            assertEquals(2, onPrivate.code(), onPrivate.out());
            assertTrue(row(onPrivate.out(), "kubelet-root").startsWith("ERROR the kubelet root " + root
                    + " is on a mount (" + mount + ") that is not shared"), onPrivate.out());
            LinuxNative.mount(null, mount.toString(), null, LinuxNative.MS_SHARED, null);
            Run onShared = doctor("--kubelet-root=" + root);
            assertTrue(row(onShared.out(), "kubelet-root").startsWith("ok the kubelet root " + root
                    + " is a directory on a shared mount (" + mount + ")"), onShared.out());
        } finally {
            LinuxNative.umount2(mount.toString(), LinuxNative.MNT_DETACH);
        }
    }

    @Test
    void thePluginRunsTheChecksAtStartAndExportsThem() throws Exception {
        try (PluginHarness plugin = PluginHarness.startWithMetrics()) {
            assertTrue(plugin.plugin().awaitDoctorAtStart(Duration.ofSeconds(60)), "the checks at start end");
            String text = plugin.plugin().registry().scrape();
            assertEquals(List.of("1.0"), findings(text, "transport=\"kernel\"", "check=\"openat2\"",
                    "severity=\"ok\""), text);
            assertEquals(List.of("1.0"), findings(text, "transport=\"kernel\"", "check=\"kubelet-root\""),
                    "the plugin's own kubelet root is checked:\n" + text);
        }
    }

    /**
     * A check's row of the text report as "SEVERITY message", without the columns' padding: the checks' column is as
     * wide as the longest check name in the report, which depends on the transports this machine has set up.
     */
    private static String row(String report, String check) {
        List<String> rows = report.lines().map(String::strip)
                .filter(line -> line.matches("\\S+ +" + Pattern.quote(check) + " .*"))
                .map(line -> line.replaceFirst("^(\\S+) +" + Pattern.quote(check) + " +", "$1 "))
                .toList();
        assertEquals(1, rows.size(), "one " + check + " row in\n" + report);
        return rows.get(0);
    }

    /** The values of the blocknode_doctor_findings samples with all these labels. */
    private static List<String> findings(String text, String... labels) {
        return text.lines().filter(line -> line.startsWith("blocknode_doctor_findings{"))
                .filter(line -> Stream.of(labels).allMatch(line::contains))
                .map(line -> line.substring(line.lastIndexOf(' ') + 1)).toList();
    }

    private static boolean hasAny(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.findAny().isPresent();
        }
    }

    /** {@code doctor} in a JVM of its own, as {@code blocknode doctor} runs it. */
    private static Run doctor(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:TieredStopAtLevel=1",
                "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), "dev.blocknode.Main", "doctor"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "doctor ends");
        return new Run(process.exitValue(), out);
    }
}
