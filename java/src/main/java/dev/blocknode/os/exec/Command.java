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
