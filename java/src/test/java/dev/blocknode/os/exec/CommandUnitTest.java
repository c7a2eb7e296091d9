package dev.blocknode.os.exec;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CommandUnitTest {

    @Test
    void ofUsesTheDefaultTimeoutAndNoInput() {
        Command command = Command.of("blkid", "-p", "/dev/sdb");
        assertEquals(List.of("blkid", "-p", "/dev/sdb"), command.argv());
        assertEquals(Duration.ofSeconds(30), command.timeout());
        assertEquals(Command.DEFAULT_TIMEOUT, command.timeout());
        assertEquals(0, command.stdin().length);
        assertEquals("blkid", command.program());
        assertEquals("blkid -p /dev/sdb", command.display());
    }

    @Test
    void aCommandNeedsAProgram() {
        assertThrows(IllegalArgumentException.class, Command::of);
        assertThrows(IllegalArgumentException.class, () -> new Command(List.of(), Duration.ofSeconds(1), null));
    }

    @Test
    void nullsAreRefused() {
        assertThrows(NullPointerException.class, () -> new Command(List.of("ls"), null, null));
        assertThrows(NullPointerException.class, () -> Command.of("ls", null));
        assertThrows(NullPointerException.class, () -> new Command(null, Duration.ofSeconds(1), null));
    }

    @Test
    void argvIsCopiedAndUnmodifiable() {
        List<String> argv = new ArrayList<>(List.of("mkfs.ext4", "/dev/sdb"));
        Command command = new Command(argv, Duration.ofSeconds(1), null);
        argv.set(1, "/dev/sda");
        argv.add("-F");
        assertEquals(List.of("mkfs.ext4", "/dev/sdb"), command.argv());
        assertThrows(UnsupportedOperationException.class, () -> command.argv().add("-F"));
    }

    @Test
    void stdinIsCopiedOnTheWayIn() {
        byte[] secret = "chap-secret".getBytes(StandardCharsets.UTF_8);
        Command command = Command.of("iscsiadm").withStdin(secret);
        secret[0] = 'X';
        assertArrayEquals("chap-secret".getBytes(StandardCharsets.UTF_8), command.stdin());

        byte[] direct = {1, 2, 3};
        Command built = new Command(List.of("cat"), Duration.ofSeconds(1), direct);
        direct[0] = 9;
        assertArrayEquals(new byte[]{1, 2, 3}, built.stdin());
    }

    @Test
    void stdinIsCopiedOnTheWayOut() {
        Command command = Command.of("cat").withStdin(new byte[]{1, 2, 3});
        command.stdin()[0] = 9;
        assertArrayEquals(new byte[]{1, 2, 3}, command.stdin());
    }

    @Test
    void withersReturnNewCommandsAndLeaveTheOriginal() {
        Command original = Command.of("sleep", "1");
        Command limited = original.withTimeout(Duration.ofMillis(5));
        Command fed = original.withStdin(new byte[]{7});
        assertEquals(Duration.ofSeconds(30), original.timeout());
        assertEquals(0, original.stdin().length);
        assertEquals(Duration.ofMillis(5), limited.timeout());
        assertEquals(original.argv(), limited.argv());
        assertArrayEquals(new byte[]{7}, fed.stdin());
        assertEquals(Duration.ofSeconds(30), fed.timeout());
        assertArrayEquals(new byte[]{7}, fed.withTimeout(Duration.ofSeconds(2)).stdin());
        assertEquals(0, original.withStdin(null).stdin().length);
    }

    // ---- CommandResult --------------------------------------------------------------------------

    @Test
    void succeededOnlyOnZero() {
        assertTrue(new CommandResult(0, "", "").succeeded());
        assertFalse(new CommandResult(1, "", "").succeeded());
        assertFalse(new CommandResult(-1, "", "").succeeded());
        assertFalse(new CommandResult(137, "", "").succeeded());
    }

    @Test
    void diagnosticPrefersStderr() {
        assertEquals("bad thing", new CommandResult(1, "some output", "  bad thing\n").diagnostic());
    }

    @Test
    void diagnosticFallsBackToStdoutWhenStderrIsBlank() {
        assertEquals("some output", new CommandResult(1, "some output\n", " \n\t").diagnostic());
        assertEquals("", new CommandResult(1, "", "").diagnostic());
    }

    @Test
    void diagnosticIsCutAt2000Characters() {
        String exact = "e".repeat(2000);
        assertEquals(exact, new CommandResult(1, "", exact).diagnostic());
        String longer = "e".repeat(2001);
        String cut = new CommandResult(1, "", longer).diagnostic();
        assertEquals("e".repeat(2000) + "...", cut);
    }

    // ---- exceptions -------------------------------------------------------------------------------

    @Test
    void failedQuotesCommandExitCodeAndDiagnostic() {
        Command command = Command.of("mkfs.xfs", "-q", "/dev/sdb");
        CommandResult result = new CommandResult(1, "", "mkfs.xfs: /dev/sdb appears to contain a filesystem\n");
        CommandException e = CommandException.failed(command, result);
        assertEquals("mkfs.xfs -q /dev/sdb exited 1: mkfs.xfs: /dev/sdb appears to contain a filesystem",
                e.getMessage());
        assertSame(command, e.command());
        assertSame(result, e.result());
        assertNull(e.getCause());
    }

    @Test
    void timeoutExceptionNamesTheLimitAndHasNoResult() {
        Command command = Command.of("iscsiadm", "-m", "session").withTimeout(Duration.ofMillis(1500));
        CommandTimeoutException e = new CommandTimeoutException(command);
        assertEquals("iscsiadm -m session timed out after 1500 ms", e.getMessage());
        assertNull(e.result());
        assertSame(command, e.command());
    }
}
