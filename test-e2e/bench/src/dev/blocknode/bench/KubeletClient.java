package dev.blocknode.bench;

import com.google.protobuf.MessageLite;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

/**
 * Figure g's grpc-go client (test-e2e/bench/kubeletclient, built by bench.sh) as a child process: one line
 * per batch of calls on its stdin, one line of durations back. Requests go over as protobuf bytes, so both
 * clients send the very requests the bench built.
 */
final class KubeletClient implements AutoCloseable {

    /** How the Go client connects. */
    enum Mode {
        /** A new connection dialed for every call and closed after it, as kubelet's csi_client.go does. */
        PER_CALL("per-op"),
        /**
         * {@link #PER_CALL} with the NodeGetCapabilities calls kubelet makes before each operation, each on a
         * connection of its own, inside the timing (see the Go client's doc).
         */
        KUBELET("kubelet"),
        /** One connection per socket for the client's life. */
        SHARED("shared");

        final String wire;

        Mode(String wire) {
            this.wire = wire;
        }
    }

    private final Process process;
    private final Writer in;
    private final BufferedReader out;

    KubeletClient(Path binary, Path pidFile) throws IOException {
        process = new ProcessBuilder(binary.toString()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        Files.writeString(pidFile, process.pid() + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /**
     * {@code n} times {@code op} (probe, info, stage, unstage, cycle, stats: see the Go client's doc) on
     * {@code socket}; the durations into {@code into} when it is not null.
     */
    void batch(String op, Mode mode, int n, Path socket, Samples into, MessageLite... requests) throws IOException {
        StringBuilder line = new StringBuilder(op).append(' ').append(mode.wire).append(' ').append(n).append(' ')
                .append(socket);
        for (MessageLite r : requests) {
            line.append(' ').append(Base64.getEncoder().encodeToString(r.toByteArray()));
        }
        in.write(line.append('\n').toString());
        in.flush();
        String answer = out.readLine();
        if (answer == null) {
            throw new IOException("the Go client exited (" + op + " " + mode.wire + ")");
        }
        if (!answer.startsWith("ok")) {
            throw new IOException("the Go client: " + answer);
        }
        if (into != null) {
            String[] fields = answer.split(" ");
            for (int i = 1; i < fields.length; i++) {
                into.add(Long.parseLong(fields[i]));
            }
        }
    }

    /** Closes its stdin (it closes its connections and exits), then waits up to 5 s. */
    @Override
    public void close() {
        try {
            in.close();
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (IOException e) {
            process.destroyForcibly();
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
