package dev.blocknode.os.exec;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcessCommandRunnerUnitTest {

    private final ProcessCommandRunner runner = new ProcessCommandRunner();

    /** Processes anywhere on the machine whose argv holds {@code marker}; used to prove a kill. */
    private static List<ProcessHandle> processesWithArgument(String program, String marker) {
        return ProcessHandle.allProcesses()
                .filter(p -> p.info().command().map(c -> c.endsWith("/" + program)).orElse(false))
                .filter(p -> p.info().arguments().map(a -> Arrays.asList(a).contains(marker)).orElse(false))
                .toList();
    }

    private static void assertAllGone(List<ProcessHandle> processes) throws Exception {
        for (ProcessHandle p : processes) {
            // Bounded wait for the reaper, not a sleep: returns as soon as the process is gone.
            p.onExit().get(10, TimeUnit.SECONDS);
            assertFalse(p.isAlive(), "process " + p.pid() + " survived");
        }
    }

    @Test
    void echoPrintsToStdout() throws Exception {
        CommandResult result = runner.run(Command.of("/bin/echo", "hello", "wide world"));
        assertEquals(0, result.exitCode());
        assertTrue(result.succeeded());
        assertEquals("hello wide world\n", result.stdout());
        assertEquals("", result.stderr());
    }

    @Test
    void argumentsAreNeverInterpretedByAShell() throws Exception {
        CommandResult result = runner.run(Command.of("/bin/echo", "$HOME", "`id`", "a;b", "*", "'q'"));
        assertEquals("$HOME `id` a;b * 'q'\n", result.stdout());
    }

    @Test
    void nonZeroExitIsAResultNotAnException() throws Exception {
        CommandResult result = runner.run(Command.of("/bin/false"));
        assertEquals(1, result.exitCode());
        assertFalse(result.succeeded());
    }

    @Test
    void programsAreFoundOnTheFixedSearchPath() throws Exception {
        CommandResult result = runner.run(Command.of("echo", "found"));
        assertEquals("found\n", result.stdout());
    }

    @Test
    void stdinReachesTheProgram() throws Exception {
        String input = "secret \u00e9\u00e8 line 1\nline 2\n";
        CommandResult result = runner.run(Command.of("/bin/cat").withStdin(input.getBytes(StandardCharsets.UTF_8)));
        assertEquals(input, result.stdout());
        assertEquals(0, result.exitCode());
    }

    @Test
    void emptyStdinIsClosedAtOnce() throws Exception {
        CommandResult result = runner.run(Command.of("/bin/cat").withTimeout(Duration.ofSeconds(20)));
        assertEquals("", result.stdout());
        assertEquals(0, result.exitCode());
    }

    @Test
    void stdinIgnoredByTheProgramIsHarmless() throws Exception {
        CommandResult result = runner.run(Command.of("/bin/echo", "x").withStdin(new byte[100]));
        assertEquals("x\n", result.stdout());
    }

    @Test
    void timeoutKillsTheProgram() throws Exception {
        Command command = Command.of("/bin/sleep", "30").withTimeout(Duration.ofMillis(200));
        long start = System.nanoTime();
        CommandTimeoutException e = assertThrows(CommandTimeoutException.class, () -> runner.run(command));
        long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(elapsedMillis < 10_000, "took " + elapsedMillis + " ms");
        assertTrue(elapsedMillis >= 200, "took " + elapsedMillis + " ms");
        assertTrue(e.getMessage().contains("timed out after 200 ms"), e.getMessage());
        assertNull(e.result());
        assertEquals(command, e.command());
        // The runner waited for the kill: no "sleep 30" child of this JVM survives, not even as a zombie.
        List<ProcessHandle> survivors = ProcessHandle.current().descendants()
                .filter(p -> p.info().command().map(c -> c.endsWith("/sleep")).orElse(false))
                .filter(p -> p.info().arguments().map(a -> Arrays.asList(a).equals(List.of("30"))).orElse(false))
                .toList();
        assertEquals(List.of(), survivors);
    }

    @Test
    void timeoutKillsTheWholeProcessTree() throws Exception {
        // timeout(1) runs sleep as its child: killing only the direct child would leave sleep behind.
        String marker = "31.4159";
        Command command = Command.of("/usr/bin/timeout", "120", "/bin/sleep", marker)
                .withTimeout(Duration.ofMillis(300));
        assertThrows(CommandTimeoutException.class, () -> runner.run(command));
        assertAllGone(processesWithArgument("sleep", marker));
        assertAllGone(processesWithArgument("timeout", marker));
    }

    @Test
    void interruptKillsTheProgramAndKeepsTheInterruptFlag() throws Exception {
        String marker = "32.718";
        Thread.currentThread().interrupt();
        CommandException e;
        try {
            e = assertThrows(CommandException.class, () -> runner.run(Command.of("/bin/sleep", marker)));
        } finally {
            assertTrue(Thread.interrupted(), "interrupt flag was cleared");
        }
        assertFalse(e instanceof CommandTimeoutException);
        assertTrue(e.getMessage().contains("interrupted"), e.getMessage());
        assertInstanceOf(InterruptedException.class, e.getCause());
        assertAllGone(processesWithArgument("sleep", marker));
    }

    @Test
    void missingProgramIsACommandException() {
        CommandException e = assertThrows(CommandException.class,
                () -> runner.run(Command.of("/nonexistent/no-such-tool-xyz", "arg")));
        assertFalse(e instanceof CommandTimeoutException);
        assertTrue(e.getMessage().contains("cannot start /nonexistent/no-such-tool-xyz"), e.getMessage());
        assertNull(e.result());
        assertTrue(e.getCause() instanceof java.io.IOException);
    }

    @Test
    void missingProgramOnTheSearchPathIsACommandException() {
        CommandException e = assertThrows(CommandException.class,
                () -> runner.run(Command.of("no-such-tool-xyz")));
        assertTrue(e.getMessage().contains("no-such-tool-xyz"), e.getMessage());
    }

    @Test
    void runCheckedReturnsTheResultOnSuccess() throws Exception {
        assertEquals("ok\n", runner.runChecked(Command.of("/bin/echo", "ok")).stdout());
    }

    @Test
    void runCheckedTurnsNonZeroExitIntoAnExceptionQuotingStderr() {
        Command command = Command.of("/bin/ls", "/no/such/dir-xyz");
        CommandException e = assertThrows(CommandException.class, () -> runner.runChecked(command));
        assertFalse(e instanceof CommandTimeoutException);
        assertTrue(e.getMessage().startsWith("/bin/ls /no/such/dir-xyz exited 2: "), e.getMessage());
        // LC_ALL=C: the tool speaks English, so the quote is predictable.
        assertTrue(e.getMessage().contains("No such file or directory"), e.getMessage());
        assertEquals(2, e.result().exitCode());
        assertTrue(e.result().stderr().contains("/no/such/dir-xyz"), e.result().stderr());
    }

    @Test
    void runCheckedOnFalse() {
        CommandException e = assertThrows(CommandException.class, () -> runner.runChecked(Command.of("/bin/false")));
        assertEquals("/bin/false exited 1: ", e.getMessage());
        assertEquals(1, e.result().exitCode());
    }

    @Test
    void environmentIsClearedExceptPathAndLocale() throws Exception {
        CommandResult result = runner.run(Command.of("/usr/bin/env"));
        Set<String> lines = result.stdout().lines().collect(Collectors.toSet());
        assertEquals(Set.of("PATH=" + ToolLocator.SEARCH_PATH, "LC_ALL=C"), lines);
        assertFalse(ToolLocator.SEARCH_PATH.contains("."), "search path must not hold a relative dir");
    }

    @Test
    void largeOutputDoesNotDeadlock() {
        CommandResult result = assertTimeoutPreemptively(Duration.ofSeconds(60),
                () -> runner.run(Command.of("/usr/bin/head", "-c", "2000000", "/dev/zero")));
        assertEquals(0, result.exitCode());
        assertEquals(2_000_000, result.stdout().length());
        assertTrue(result.stdout().chars().allMatch(c -> c == 0));
    }

    @Test
    void largeInputAndOutputTogetherDoNotDeadlock() {
        byte[] input = "0123456789abcdef".repeat(150_000).getBytes(StandardCharsets.US_ASCII);
        CommandResult result = assertTimeoutPreemptively(Duration.ofSeconds(60),
                () -> runner.run(Command.of("/bin/cat").withStdin(input)));
        assertEquals(input.length, result.stdout().length());
        assertEquals(new String(input, StandardCharsets.US_ASCII), result.stdout());
    }

    @Test
    void largeStderrDoesNotDeadlock() {
        // cat names every missing file on stderr: ~ 1.5 MB of complaints while stdout stays empty.
        String[] argv = new String[15_001];
        argv[0] = "/bin/cat";
        for (int i = 1; i < argv.length; i++) {
            argv[i] = "/no/such/file/" + "n".repeat(60) + i;
        }
        CommandResult result = assertTimeoutPreemptively(Duration.ofSeconds(60),
                () -> runner.run(Command.of(argv)));
        assertEquals(1, result.exitCode());
        assertTrue(result.stderr().length() > 1_000_000, "stderr was " + result.stderr().length());
        assertEquals(15_000, result.stderr().lines().count());
    }

    @Test
    void timeoutAppliesWhileWritingStdin() {
        Command command = Command.of("/bin/sleep", "5").withStdin(new byte[1 << 20])
                .withTimeout(Duration.ofMillis(200));
        assertTimeoutPreemptively(Duration.ofSeconds(3),
                () -> assertThrows(CommandTimeoutException.class, () -> runner.run(command)));
    }

    @Test
    void timeoutAppliesWhileADescendantHoldsStdoutOpen() throws Exception {
        String marker = "5.0271";
        Command command = Command.of("/usr/bin/setsid", "-f", "/bin/sleep", marker)
                .withTimeout(Duration.ofMillis(200));
        try {
            assertTimeoutPreemptively(Duration.ofSeconds(3), () -> {
                try {
                    runner.run(command);
                } catch (CommandException expected) {
                    // a timeout is an acceptable answer; hanging is not
                }
            });
        } finally {
            for (ProcessHandle orphan : processesWithArgument("sleep", marker)) {
                orphan.destroyForcibly();
            }
        }
    }
}
