package dev.blocknode.os.natives;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs host tools (losetup, mkfs.ext4, ...) with argument arrays, never through a shell. */
final class Commands {

    private Commands() {
    }

    /** Runs the command and returns its stdout; throws with the output if it fails. */
    static String run(String... command) throws IOException {
        Result result = runAllowingFailure(command);
        if (result.exitCode() != 0) {
            throw new IOException(String.join(" ", command) + " exited " + result.exitCode()
                    + ": " + result.output().strip());
        }
        return result.output();
    }

    record Result(int exitCode, String output) {
    }

    /** Runs the command with stderr merged into stdout; fails only if it cannot run or hangs. */
    static Result runAllowingFailure(String... command) throws IOException {
        return runAllowingFailure(List.of(command));
    }

    static Result runAllowingFailure(List<String> command) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        process.getOutputStream().close();
        try {
            // The output is small; reading to EOF first cannot dead-lock on a full pipe.
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(command + " did not finish in 120 s");
            }
            return new Result(process.exitValue(), output);
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + command, e);
        }
    }
}
