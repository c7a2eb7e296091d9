package dev.blocknode.os.exec;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Runs commands with {@link ProcessBuilder}: argument arrays only, a fixed PATH-free environment
 * (LC_ALL=C so tools print parseable English), output read concurrently so a chatty tool cannot block
 * on a full pipe, and on timeout the whole process tree is killed.
 */
public final class ProcessCommandRunner implements CommandRunner {

    @Override
    public CommandResult run(Command command) throws CommandException {
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
        try (OutputStream in = process.getOutputStream()) {
            in.write(command.stdin());
        } catch (IOException ignored) {
            // The tool exited before reading its input; its exit code tells what happened.
        }
        try {
            if (!process.waitFor(command.timeout().toMillis(), TimeUnit.MILLISECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor();
                throw new CommandTimeoutException(command);
            }
            return new CommandResult(process.exitValue(), text(stdout), text(stderr));
        } catch (InterruptedException e) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new CommandException(command, null, command.program() + " interrupted", e);
        }
    }

    private static CompletableFuture<byte[]> drain(InputStream stream) {
        return CompletableFuture.supplyAsync(() -> {
            try (stream) {
                ByteArrayOutputStream buffer = new ByteArrayOutputStream();
                stream.transferTo(buffer);
                return buffer.toByteArray();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
    }

    private static String text(CompletableFuture<byte[]> output) throws InterruptedException {
        try {
            return new String(output.get(), StandardCharsets.UTF_8);
        } catch (ExecutionException e) {
            return "";
        }
    }
}
