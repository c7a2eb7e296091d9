package dev.blocknode.os.exec;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs commands with {@link ProcessBuilder}: argument arrays only, an environment of just PATH and
 * LC_ALL=C (so tools print parseable English), standard input written and output read on their own
 * threads so that neither can block the caller, and one deadline for all of it. On timeout the process
 * and its descendants are killed.
 */
public final class ProcessCommandRunner implements CommandRunner {

    private static final int READ_CHUNK_BYTES = 4 * 1024;
    private static final long KILL_WAIT_MILLIS = 5_000;

    @Override
    public CommandResult run(Command command) throws CommandException {
        long deadline = System.nanoTime() + command.timeout().toNanos();
        ProcessBuilder builder = new ProcessBuilder(command.argv());
        builder.environment().clear();
        builder.environment().put("PATH", ToolLocator.SEARCH_PATH);
        builder.environment().put("LC_ALL", "C");
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw new CommandException(command, null, "cannot start " + command.program() + ": " + e.getMessage(), e);
        }
        CompletableFuture<byte[]> stdout = drain(process.getInputStream());
        CompletableFuture<byte[]> stderr = drain(process.getErrorStream());
        feed(process.getOutputStream(), command.stdin());
        try {
            if (!process.waitFor(remaining(deadline), TimeUnit.NANOSECONDS)) {
                kill(process);
                throw new CommandTimeoutException(command);
            }
            // A descendant that outlives the process can hold the pipes open: the deadline covers that too.
            return new CommandResult(process.exitValue(), text(stdout, deadline), text(stderr, deadline));
        } catch (TimeoutException e) {
            kill(process);
            closeQuietly(process.getInputStream());
            closeQuietly(process.getErrorStream());
            throw new CommandTimeoutException(command);
        } catch (InterruptedException e) {
            kill(process);
            Thread.currentThread().interrupt();
            throw new CommandException(command, null, command.program() + " interrupted", e);
        }
    }

    private static long remaining(long deadline) {
        return Math.max(0, deadline - System.nanoTime());
    }

    /**
     * SIGKILL to the process and its descendants, then a bounded wait until the process is reaped: SIGKILL is
     * asynchronous, and a caller that goes on (a retry, a test counting children) must not still meet it. The
     * wait is bounded because a process in an uninterruptible kernel wait dies only when that wait ends.
     */
    private static void kill(Process process) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        try {
            process.waitFor(KILL_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void feed(OutputStream in, byte[] input) {
        if (input.length == 0) {
            closeQuietly(in); // nothing to write: closing a pipe does not block, so no thread for it
            return;
        }
        Thread.startVirtualThread(() -> {
            try (in) {
                in.write(input);
            } catch (IOException ignored) {
                // The tool exited or closed its input early; its exit code tells what happened.
            }
        });
    }

    /**
     * Reads in small chunks, not with {@code transferTo}: its 16 KiB buffer is live on the heap for the whole
     * run of the command, twice per command, and the JDK mallocs a buffer for every read above 8 KiB; in a
     * burst of stages (a hundred mkfs at once) that was megabytes of peak RSS (test-e2e/bench, figure e).
     */
    private static CompletableFuture<byte[]> drain(InputStream stream) {
        return CompletableFuture.supplyAsync(() -> {
            try (stream) {
                ByteArrayOutputStream buffer = new ByteArrayOutputStream();
                byte[] chunk = new byte[READ_CHUNK_BYTES];
                for (int n = stream.read(chunk); n >= 0; n = stream.read(chunk)) {
                    buffer.write(chunk, 0, n);
                }
                return buffer.toByteArray();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
    }

    private static String text(CompletableFuture<byte[]> output, long deadline)
            throws InterruptedException, TimeoutException {
        try {
            return new String(output.get(remaining(deadline), TimeUnit.NANOSECONDS), StandardCharsets.UTF_8);
        } catch (ExecutionException e) {
            return "";
        }
    }

    private static void closeQuietly(Closeable stream) {
        try {
            stream.close();
        } catch (IOException ignored) {
            // best effort: unblocks a drain thread, or ends the program's input
        }
    }
}
