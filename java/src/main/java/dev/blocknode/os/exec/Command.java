package dev.blocknode.os.exec;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * One external command: an argument array (never a shell line), a time limit, and optional bytes for
 * standard input. Standard input is how a secret reaches a tool without appearing in any process's argv.
 */
public record Command(List<String> argv, Duration timeout, byte[] stdin) {

    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    public Command {
        argv = List.copyOf(argv);
        if (argv.isEmpty()) {
            throw new IllegalArgumentException("a command needs at least a program name");
        }
        Objects.requireNonNull(timeout, "timeout");
        stdin = stdin == null ? new byte[0] : stdin.clone();
    }

    /** A copy: the command's input cannot be changed through what this returns. */
    @Override
    public byte[] stdin() {
        return stdin.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Command that && argv.equals(that.argv) && timeout.equals(that.timeout)
                && java.util.Arrays.equals(stdin, that.stdin);
    }

    @Override
    public int hashCode() {
        return Objects.hash(argv, timeout) * 31 + java.util.Arrays.hashCode(stdin);
    }

    @Override
    public String toString() {
        return "Command[" + display() + ", timeout=" + timeout + ", stdin=" + stdin.length + " bytes]";
    }

    public static Command of(String... argv) {
        return new Command(List.of(argv), DEFAULT_TIMEOUT, null);
    }

    public Command withTimeout(Duration limit) {
        return new Command(argv, limit, stdin);
    }

    public Command withStdin(byte[] input) {
        return new Command(argv, timeout, input);
    }

    public String program() {
        return argv.get(0);
    }

    /** The argv joined for messages; argv never holds secrets, so it is safe to log. */
    public String display() {
        return String.join(" ", argv);
    }
}
