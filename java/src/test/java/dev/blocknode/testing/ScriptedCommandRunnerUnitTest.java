package dev.blocknode.testing;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandTimeoutException;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ScriptedCommandRunnerUnitTest {

    @Test
    void playsTheScriptInOrderAndRecordsEveryCall() throws Exception {
        ScriptedCommandRunner runner = new ScriptedCommandRunner();
        runner.expect("multipath", "-a", "3600").succeeds("wwid '3600' added\n");
        runner.expect("dmsetup", "message", "mpatha", "0", "fail_if_no_path").fails(1, "Device does not exist.");
        CommandResult first = runner.run(Command.of("multipath", "-a", "3600"));
        assertEquals(0, first.exitCode());
        assertEquals("wwid '3600' added\n", first.stdout());
        CommandResult second = runner.run(Command.of("dmsetup", "message", "mpatha", "0", "fail_if_no_path")
                .withTimeout(Duration.ofSeconds(3)).withStdin("x".getBytes(StandardCharsets.UTF_8)));
        assertEquals(1, second.exitCode());
        assertEquals("Device does not exist.", second.stderr());
        runner.assertAllConsumed();
        assertEquals(List.of("multipath -a 3600", "dmsetup message mpatha 0 fail_if_no_path"), runner.commandLines());
        assertEquals(Duration.ofSeconds(3), runner.calls().get(1).timeout());
        assertArrayEquals("x".getBytes(StandardCharsets.UTF_8), runner.calls().get(1).stdin());
    }

    @Test
    void anUnexpectedCallFailsNamingWhatWasExpected() {
        ScriptedCommandRunner runner = new ScriptedCommandRunner();
        runner.expect("multipath", "-f", "mpatha");
        AssertionError e = assertThrows(AssertionError.class, () -> runner.run(Command.of("multipath", "-F")));
        assertTrue(e.getMessage().contains("unexpected command #1: multipath -F"), e.getMessage());
        assertTrue(e.getMessage().contains("expected next: multipath -f mpatha"), e.getMessage());
        // even if the code under test had swallowed the error, the final check reports it
        assertThrows(AssertionError.class, runner::assertAllConsumed);
    }

    @Test
    void aCallOutOfOrderFails() {
        ScriptedCommandRunner runner = new ScriptedCommandRunner();
        runner.expect("a");
        runner.expect("b");
        AssertionError e = assertThrows(AssertionError.class, () -> runner.run(Command.of("b")));
        assertTrue(e.getMessage().contains("expected next: a"), e.getMessage());
    }

    @Test
    void aCallAfterTheScriptEndedFails() {
        ScriptedCommandRunner runner = new ScriptedCommandRunner();
        AssertionError e = assertThrows(AssertionError.class, () -> runner.run(Command.of("ls")));
        assertTrue(e.getMessage().contains("(no more commands)"), e.getMessage());
    }

    @Test
    void leftoverExpectationsFailTheFinalCheck() throws Exception {
        ScriptedCommandRunner runner = new ScriptedCommandRunner();
        runner.expect("a");
        runner.expect("b");
        runner.run(Command.of("a"));
        AssertionError e = assertThrows(AssertionError.class, runner::assertAllConsumed);
        assertTrue(e.getMessage().contains("never ran: [b]"), e.getMessage());
    }

    @Test
    void matchersActionsAndExceptions() throws Exception {
        ScriptedCommandRunner runner = new ScriptedCommandRunner();
        List<String> effects = new ArrayList<>();
        runner.expect("any multipathd add path", c -> c.argv().subList(0, 3).equals(List.of("multipathd", "add", "path")))
                .succeeds("ok\n").andDo(c -> effects.add(c.argv().get(3)));
        runner.expect("iscsiadm").timesOut();
        runner.expect("missing-tool").throwing(c -> new CommandException(c, null, "cannot start", null));
        assertEquals("ok\n", runner.run(Command.of("multipathd", "add", "path", "sdq")).stdout());
        assertEquals(List.of("sdq"), effects);
        assertThrows(CommandTimeoutException.class, () -> runner.run(Command.of("iscsiadm")));
        CommandException e = assertThrows(CommandException.class, () -> runner.run(Command.of("missing-tool")));
        assertEquals("cannot start", e.getMessage());
        runner.assertAllConsumed();
    }

    @Test
    void anyTimesMatchesARetryLoopOfUnknownLength() throws Exception {
        ScriptedCommandRunner runner = new ScriptedCommandRunner();
        runner.expect("multipath", "-f", "m").fails(1, "map in use").anyTimes();
        runner.expect("done");
        for (int i = 0; i < 5; i++) {
            assertEquals(1, runner.run(Command.of("multipath", "-f", "m")).exitCode());
        }
        runner.run(Command.of("done"));
        runner.assertAllConsumed();

        ScriptedCommandRunner unused = new ScriptedCommandRunner();
        unused.expect("x").anyTimes();
        assertDoesNotThrow(unused::assertAllConsumed);
    }

    @Test
    void inAnyOrderEachExpectationMatchesOnceWhateverTheOrder() throws Exception {
        ScriptedCommandRunner runner = ScriptedCommandRunner.inAnyOrder();
        List<String> effects = new ArrayList<>();
        runner.expect("multipathd", "add", "path", "sda").andDo(c -> effects.add("sda"));
        runner.expect("multipathd", "add", "path", "sdb").andDo(c -> effects.add("sdb"));
        runner.expect("iscsiadm", "-o", "delete").anyTimes();
        runner.run(Command.of("multipathd", "add", "path", "sdb"));
        runner.run(Command.of("iscsiadm", "-o", "delete"));
        runner.run(Command.of("multipathd", "add", "path", "sda"));
        runner.run(Command.of("iscsiadm", "-o", "delete"));
        assertEquals(List.of("sdb", "sda"), effects);
        runner.assertAllConsumed();

        AssertionError twice = assertThrows(AssertionError.class,
                () -> runner.run(Command.of("multipathd", "add", "path", "sda")));
        assertTrue(twice.getMessage().contains("multipathd add path sda"), twice.getMessage());
        assertThrows(AssertionError.class, runner::assertAllConsumed, "a call past its expectation fails the check");
    }

    @Test
    void inAnyOrderAnExpectationThatNeverRanFailsTheFinalCheck() throws Exception {
        ScriptedCommandRunner runner = ScriptedCommandRunner.inAnyOrder();
        runner.expect("multipath", "-f", "mpatha");
        runner.expect("multipath", "-f", "mpathb");
        runner.run(Command.of("multipath", "-f", "mpathb"));
        AssertionError left = assertThrows(AssertionError.class, runner::assertAllConsumed);
        assertTrue(left.getMessage().contains("multipath -f mpatha"), left.getMessage());
        assertThrows(IllegalStateException.class, () -> runner.expect("anything", c -> true),
                "in any order, expectations are found by their argv");
    }
}
