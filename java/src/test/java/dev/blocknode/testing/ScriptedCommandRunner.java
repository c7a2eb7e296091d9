package dev.blocknode.testing;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.CommandTimeoutException;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A CommandRunner that plays a script, in the manner of k8s.io/utils/exec's fake: the test queues the
 * commands it expects, in order, each with its exact argv (or a matcher) and its outcome: an exit code and
 * output, or an exception. An optional action runs first, so a fake "multipathd" can create the map it
 * was asked for. A call that is not the next expected one fails the test, naming the call, what was
 * expected and what ran before; {@link #assertAllConsumed()} fails on expectations left over. Every call
 * is recorded (argv, timeout and stdin) for inspection.
 *
 * <p>{@link #inAnyOrder()} makes one whose exact-argv expectations match in whatever order the calls come, each once
 * (or any number of times, {@link Expectation#anyTimes()}): for calls made by concurrent threads (a burst of stages,
 * one thread per volume), whose interleaving no script can foretell. They are found by their argv, so a burst of
 * hundreds of calls costs the fake no walk of the script per call.
 */
public final class ScriptedCommandRunner implements CommandRunner {

    /** Something the fake does when the command runs: the command's effect on the fabricated host. */
    @FunctionalInterface
    public interface Action {
        void run(Command command) throws Exception;
    }

    /** One expected call and its scripted outcome. */
    public static final class Expectation {
        private final String description;
        private final Predicate<Command> matcher;
        private CommandResult result = new CommandResult(0, "", "");
        private Function<Command, CommandException> failure;
        private Action action;
        private boolean anyTimes;

        private Expectation(String description, Predicate<Command> matcher) {
            this.description = description;
            this.matcher = matcher;
        }

        /** Exit code and output of the command. The default is exit 0 with no output. */
        public Expectation returns(int exitCode, String stdout, String stderr) {
            this.result = new CommandResult(exitCode, stdout, stderr);
            this.failure = null;
            return this;
        }

        public Expectation succeeds(String stdout) {
            return returns(0, stdout, "");
        }

        public Expectation fails(int exitCode, String stderr) {
            return returns(exitCode, "", stderr);
        }

        /** The command cannot run at all (not installed, ...): run throws what {@code exception} builds. */
        public Expectation throwing(Function<Command, CommandException> exception) {
            this.failure = exception;
            return this;
        }

        public Expectation timesOut() {
            return throwing(CommandTimeoutException::new);
        }

        /** Runs {@code effect} when the command is called, before its outcome is returned. */
        public Expectation andDo(Action effect) {
            this.action = effect;
            return this;
        }

        /**
         * Zero or more consecutive calls match this expectation (a retry loop whose count depends on time);
         * it is passed over once a call matches the expectation after it.
         */
        public Expectation anyTimes() {
            this.anyTimes = true;
            return this;
        }

        @Override
        public String toString() {
            return anyTimes ? description + " (any number of times)" : description;
        }
    }

    private final Deque<Expectation> expected = new ArrayDeque<>();
    private final List<Command> calls = new ArrayList<>();
    private final List<String> failures = new ArrayList<>();
    /** In any order: the expectations by argv, each argv's in the order they were made. Null for a script. */
    private final Map<List<String>, Deque<Expectation>> byArgv;

    public ScriptedCommandRunner() {
        this(false);
    }

    private ScriptedCommandRunner(boolean anyOrder) {
        this.byArgv = anyOrder ? new HashMap<>() : null;
    }

    /** A runner whose expectations (exact argv only) match calls in any order: see the class comment. */
    public static ScriptedCommandRunner inAnyOrder() {
        return new ScriptedCommandRunner(true);
    }

    /** Expects exactly this argv next (in any order: at some point). */
    public synchronized Expectation expect(String... argv) {
        List<String> wanted = List.of(argv);
        Expectation expectation = new Expectation(String.join(" ", argv), command -> command.argv().equals(wanted));
        if (byArgv != null) {
            byArgv.computeIfAbsent(wanted, k -> new ArrayDeque<>()).addLast(expectation);
        } else {
            expected.addLast(expectation);
        }
        return expectation;
    }

    /** Expects a command that {@code matcher} accepts next; {@code description} is what messages show. */
    public synchronized Expectation expect(String description, Predicate<Command> matcher) {
        if (byArgv != null) {
            throw new IllegalStateException("a runner in any order finds its expectations by argv: " + description);
        }
        Expectation expectation = new Expectation(description, matcher);
        expected.addLast(expectation);
        return expectation;
    }

    @Override
    public CommandResult run(Command command) throws CommandException {
        Expectation next = byArgv != null ? matchInAnyOrder(command) : matchNext(command);
        if (next.action != null) {
            try {
                next.action.run(command);
            } catch (Exception e) {
                throw new AssertionError("the scripted action of \"" + next + "\" failed: " + e, e);
            }
        }
        if (next.failure != null) {
            throw next.failure.apply(command);
        }
        return next.result;
    }

    /** Any expectation of the call's argv: the first made, which stays if it may match any number of times. */
    private synchronized Expectation matchInAnyOrder(Command command) {
        calls.add(command);
        Deque<Expectation> ofArgv = byArgv.get(command.argv());
        Expectation match = ofArgv == null ? null : ofArgv.peekFirst();
        if (match == null) {
            String message = "unexpected command #" + calls.size() + ": " + command.display()
                    + " (in any order: no expectation has its argv; " + stillExpected().size() + " still expected)";
            failures.add(message);
            throw new AssertionError(message);
        }
        if (!match.anyTimes) {
            ofArgv.removeFirst();
        }
        return match;
    }

    private List<Expectation> stillExpected() {
        if (byArgv == null) {
            return List.copyOf(expected);
        }
        return byArgv.values().stream().flatMap(Deque::stream).toList();
    }

    private Expectation matchNext(Command command) {
        Expectation next;
        synchronized (this) {
            calls.add(command);
            next = expected.peekFirst();
            while (next != null && next.anyTimes && !next.matcher.test(command)) {
                expected.removeFirst();
                next = expected.peekFirst();
            }
            if (next == null || !next.matcher.test(command)) {
                String message = "unexpected command #" + calls.size() + ": " + command.display()
                        + "\n  expected next: " + (next == null ? "(no more commands)" : next)
                        + "\n  still expected: " + expected
                        + "\n  ran before: " + calls.subList(0, calls.size() - 1).stream().map(Command::display).toList();
                failures.add(message);
                throw new AssertionError(message);
            }
            if (!next.anyTimes) {
                expected.removeFirst();
            }
        }
        return next;
    }

    /** Fails unless every expectation was met and no unexpected command ran (even one whose error was caught). */
    public synchronized void assertAllConsumed() {
        if (!failures.isEmpty()) {
            throw new AssertionError(String.join("\n", failures));
        }
        List<Expectation> left = stillExpected();
        if (left.stream().anyMatch(e -> !e.anyTimes)) {
            throw new AssertionError("expected commands that never ran: " + left + "\n  ran: "
                    + calls.stream().map(Command::display).toList());
        }
    }

    public synchronized List<Command> calls() {
        return List.copyOf(calls);
    }

    /** The argv of every call, joined with spaces: handy for comparing a whole sequence at once. */
    public synchronized List<String> commandLines() {
        return calls.stream().map(Command::display).toList();
    }
}
