package dev.blocknode.testing;

import dev.blocknode.csi.client.CsiClient;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;

/**
 * The real plugin (dev.blocknode.Main) as a child process, with its socket, kubelet root and state dir
 * under {@code dir}: what a crash test kills and starts again. Its classpath is this test JVM's. Every
 * line it prints is kept, and a test can wait for one (no sleeping). close() stops it with SIGTERM, or
 * kills it when it does not stop.
 */
public final class PluginProcess implements AutoCloseable {

    private static final Duration STARTUP = Duration.ofSeconds(30);

    private final Process process;
    private final List<String> lines = new ArrayList<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private boolean ended;
    private CsiClient client;

    private PluginProcess(Process process) {
        this.process = process;
        Thread.ofVirtual().name("plugin-output").start(this::collectOutput);
    }

    /** Starts the plugin with these extra environment variables and waits until it serves its socket. */
    public static PluginProcess start(Path dir, Map<String, String> environment) throws IOException {
        return start(dir, environment, List.of());
    }

    /** As {@link #start(Path, Map)}, with more flags after the usual ones (e.g. {@code --metrics-address}). */
    public static PluginProcess start(Path dir, Map<String, String> environment, List<String> flags)
            throws IOException {
        Path socket = dir.resolve("csi.sock");
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                // C1 only: these processes live a few seconds, starting fast matters more than peak speed.
                "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), "dev.blocknode.Main",
                "--endpoint", "unix://" + socket,
                "--node-id", PluginHarness.NODE_ID,
                "--kubelet-root", dir.resolve("kubelet").toString(),
                "--state-dir", dir.resolve("state").toString(),
                "--log-format", "text",
                "--shutdown-grace", "5s"));
        command.addAll(flags);
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.redirectErrorStream(true);
        builder.environment().keySet().removeIf(name -> name.startsWith("BLOCKNODE_"));
        builder.environment().putAll(environment);
        PluginProcess plugin = new PluginProcess(builder.start());
        try {
            plugin.awaitLine(line -> line.contains("listening on unix://" + socket), STARTUP);
        } catch (AssertionError | RuntimeException e) {
            plugin.close();
            throw e;
        }
        plugin.client = new CsiClient(socket);
        return plugin;
    }

    public CsiClient client() {
        return client;
    }

    /** Everything the plugin printed so far. */
    public List<String> output() {
        lock.lock();
        try {
            return List.copyOf(lines);
        } finally {
            lock.unlock();
        }
    }

    /** Waits for a line the plugin prints; fails with its output when none comes in time or it ends first. */
    public String awaitLine(Predicate<String> wanted, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        lock.lock();
        try {
            int seen = 0;
            while (true) {
                for (; seen < lines.size(); seen++) {
                    if (wanted.test(lines.get(seen))) {
                        return lines.get(seen);
                    }
                }
                long left = deadline - System.nanoTime();
                if (ended || left <= 0) {
                    throw new AssertionError("the plugin " + (ended ? "ended" : "did not print the line in "
                            + timeout.toSeconds() + " s") + "; its output:\n" + String.join("\n", lines));
                }
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted waiting for the plugin's output", e);
        } finally {
            lock.unlock();
        }
    }

    /** The exit code, once the process has ended by itself within {@code timeout}. */
    public int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the plugin is still running after " + timeout.toSeconds() + " s; its output:\n"
                    + String.join("\n", output()));
        }
        return process.exitValue();
    }

    /** True when the process ends within {@code timeout} (or has ended). */
    public boolean endsWithin(Duration timeout) throws InterruptedException {
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        if (client != null) {
            client.close();
        }
        if (process.isAlive()) {
            process.destroy(); // SIGTERM: the plugin drains its calls and removes its socket
            try {
                if (!process.waitFor(15, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private void collectOutput() {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                lock.lock();
                try {
                    lines.add(line);
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        } catch (IOException ignored) {
            // the process ended; what it printed is kept
        } finally {
            lock.lock();
            try {
                ended = true;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }
}
