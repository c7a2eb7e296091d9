package dev.blocknode.client;

import dev.blocknode.doctor.ToolOwner;
import dev.blocknode.os.AbstractSockets;
import dev.blocknode.os.host.KernelFeatures;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.testing.TerminalText;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code blocknode doctor}'s interface: flags, exit codes, the text and the JSON form, over a fabricated host. */
class DoctorCommandUnitTest {

    @TempDir
    Path temp;

    private FakeSysfs host;
    private final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    private KernelFeatures features = feature -> Optional.empty();

    private record Run(int code, String out, String err) {
    }

    @BeforeEach
    void nothingSetUp() throws Exception {
        host = new FakeSysfs(temp);
        Files.createDirectories(host.paths().unixSockets().getParent());
        Files.writeString(host.paths().unixSockets(), "Num       RefCount Protocol Flags    Type St Inode Path\n");
    }

    private Run doctor(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = DoctorCommand.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                new DoctorCommand.Machine(host.paths(), commands, features, ToolOwner.IMAGE));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aNodeWithNothingSetUpIsReady() {
        Run run = doctor();
        assertEquals(DoctorCommand.ALL_OK, run.code(), run.out());
        assertTrue(run.out().startsWith("ready: no warnings, no errors\n"), run.out());
        for (String transport : new String[]{"iscsi", "multipath", "fc", "nvme-tcp"}) {
            assertTrue(run.out().contains("\n" + transport + ": not set up ("), transport + " in\n" + run.out());
        }
        assertTrue(run.out().contains("\nkernel\n  ok       native-library"), run.out());
        commands.assertAllConsumed();
    }

    @Test
    void aWarningIsExitOneAndAnErrorExitTwoWithTheFixUnderIt() throws Exception {
        features = feature -> feature == KernelFeatures.Feature.OPENAT2 ? Optional.of("ENOSYS") : Optional.empty();
        Run warned = doctor();
        assertEquals(DoctorCommand.WARNINGS, warned.code(), warned.out());
        assertTrue(warned.out().startsWith("0 error(s), 1 warning(s)\n"), warned.out());
        assertTrue(warned.out().contains("  WARNING  openat2"), warned.out());
        assertTrue(warned.out().contains("fix: run a newer kernel"), warned.out());

        host.fcHost(3, "0x21000024ff7a3b01", "Linkdown");
        Run failed = doctor();
        assertEquals(DoctorCommand.ERRORS, failed.code(), failed.out());
        assertTrue(failed.out().contains("  ERROR    online"), failed.out());
    }

    @Test
    void theJsonFormHasItsSchema() throws Exception {
        host.fcHost(3, "0x21000024ff7a3b01", "Online");
        Files.writeString(host.paths().unixSockets(), "0000000000000000: 00000002 00000000 00010000 0001 01 18122 "
                + AbstractSockets.MULTIPATHD + "\n", StandardOpenOption.APPEND);
        for (int run = 0; run < 2; run++) { // both flag forms below
            commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"no\"\n}\n");
        }
        Run run = doctor("-o", "json");
        assertEquals(0, run.code());
        String json = run.out();
        assertTrue(json.startsWith("{\"schemaVersion\":1,\"worst\":\"ok\",\"transports\":[{\"transport\":\"iscsi\","
                + "\"setUp\":false,\"notSetUp\":\"no "), json);
        assertTrue(json.contains("{\"transport\":\"fc\",\"setUp\":true,\"notSetUp\":null,\"worst\":\"ok\","
                + "\"findings\":[{\"check\":\"port\",\"severity\":\"ok\",\"message\":\"host3 (WWPN 21000024ff7a3b01)"
                + " is Online\",\"fix\":\"\"},{\"check\":\"multipath\",\"severity\":\"ok\",\"message\":\"dm-multipath is"
                + " set up: a volume's paths become one map (checked under multipath)\",\"fix\":\"\"}]}"), json);
        assertTrue(json.endsWith("]}\n") && json.lines().count() == 1, json);
        assertEquals(json, doctor("--output=json").out(), "both flag forms");
    }

    @Test
    void aUsageErrorIsExitThree() {
        assertEquals(DoctorCommand.USAGE, doctor("-o", "yaml").code());
        assertEquals(DoctorCommand.USAGE, doctor("--volume", "x").code());
        assertEquals(DoctorCommand.USAGE, doctor("extra").code());
        assertEquals(DoctorCommand.USAGE, doctor("--repair-interval", "soon").code());
        assertEquals(DoctorCommand.ALL_OK, doctor("--repair-interval", "0").code(), "0: the repair loop is off");
        assertEquals(DoctorCommand.ALL_OK, doctor("--repair-interval=10s").code());
        Run dangling = doctor("--kubelet-root");
        assertEquals(DoctorCommand.USAGE, dangling.code());
        assertTrue(dangling.err().contains("needs a value"), dangling.err());
        assertEquals(DoctorCommand.ALL_OK, doctor("--help").code());
        assertTrue(commands.calls().isEmpty());
    }
    /**
     * The doctor reads the host's configuration files (multipath.conf, nvme-cli's hostnqn, the initiator
     * name); a FIFO at one of those names made it wait for a writer for ever. Each is refused at once, as a finding
     * that names it.
     */
    @Test
    void aFifoAtAConfigurationFileIsAFindingNeverAWait() throws Exception {
        Path multipathConf = host.paths().multipathConf();
        Path hostNqn = host.paths().nvmeHostDirectory().resolve("hostnqn");
        for (Path fifo : List.of(multipathConf, hostNqn)) {
            Files.createDirectories(fifo.getParent());
            assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        }
        Run run = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> doctor());
        assertEquals(DoctorCommand.ERRORS, run.code(), run.out());
        assertTrue(run.out().contains("cannot check multipath: " + multipathConf + " is a FIFO, not a regular file"),
                run.out());
        assertTrue(run.out().contains(hostNqn + " is a FIFO, not a regular file"), run.out());
    }
    /** A refused value was printed raw; the doctor's refusals are one escaped line. */
    @Test
    void aRefusedValueIsPrintedEscaped() {
        Run run = doctor("--repair-interval", "1s\n\u001b[2J\u202e");
        assertEquals(DoctorCommand.USAGE, run.code());
        assertTrue(run.err().contains("\"1s\\n\\x1b[2J\\u202e\""), run.err());
        assertEquals(1, run.err().lines().count(), run.err());
        TerminalText.assertSafe(run.err());
    }
}
