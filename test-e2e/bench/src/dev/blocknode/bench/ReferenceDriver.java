package dev.blocknode.bench;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.v1.ProbeRequest;
import io.grpc.StatusRuntimeException;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * csi-driver-host-path's hostpathplugin (the kubernetes-csi reference driver, controller and node in one
 * binary, built from upstream source: test-e2e/sidecars/get.sh) as a separate process, for figure g. Its
 * PATH holds only the tools its own image has: where systemd-run is on PATH but cannot run, as here,
 * k8s.io/mount-utils tries it before every mount and the driver is several times slower than in its image,
 * which would not be a fair baseline (see ../shared/tools/README.md).
 */
final class ReferenceDriver implements AutoCloseable {

    static final String DRIVER = "hostpath.csi.k8s.io";
    /** What the image of csi-driver-host-path carries and the driver runs (mount-utils, its block volumes). */
    private static final List<String> TOOLS = List.of("mount", "umount", "findmnt", "losetup", "blockdev",
            "fallocate", "du", "df");

    final Path dir;
    final Path socket;
    final Path kubelet;
    final Process process;
    private final Path log;
    private CsiClient client;

    private ReferenceDriver(Path dir, Process process) {
        this.dir = dir;
        this.socket = dir.resolve("csi.sock");
        this.kubelet = dir.resolve("kubelet");
        this.log = dir.resolve("plugin.log");
        this.process = process;
    }

    static ReferenceDriver start(Path binary, Path dir, Path pidFile) throws IOException {
        Path bin = dir.resolve("bin");
        Files.createDirectories(bin);
        Files.createDirectories(dir.resolve("kubelet"));
        Files.createDirectories(dir.resolve("state"));
        for (String tool : TOOLS) {
            Files.createSymbolicLink(bin.resolve(tool), which(tool));
        }
        ProcessBuilder builder = new ProcessBuilder(binary.toString(), "--endpoint=unix://" + dir.resolve("csi.sock"),
                "--nodeid=bench-node", "--drivername=" + DRIVER, "--statedir=" + dir.resolve("state"), "--v=1")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("plugin.log").toFile()));
        builder.environment().put("PATH", bin.toString());
        Process process = builder.start();
        Files.writeString(pidFile, process.pid() + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        ReferenceDriver driver = new ReferenceDriver(dir, process);
        driver.awaitProbe();
        return driver;
    }

    private static Path which(String tool) throws IOException {
        for (String entry : System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(File.pathSeparator)) {
            Path candidate = Path.of(entry, tool);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new IOException(tool + " is not on PATH; the reference driver needs it");
    }

    private void awaitProbe() throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("the reference driver exited with " + process.exitValue() + "; its log: " + log);
            }
            if (Files.exists(socket)) {
                try {
                    client().identity().withDeadlineAfter(5, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance());
                    return;
                } catch (StatusRuntimeException notYet) {
                    // not serving yet
                }
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
        }
        throw new IOException("the reference driver did not answer Probe within 30 s; its log: " + log);
    }

    CsiClient client() {
        if (client == null) {
            client = new CsiClient(socket);
        }
        return client;
    }

    /** SIGTERM, then up to 10 s. Its volumes (directories, files, loop devices) are DeleteVolume's. */
    @Override
    public void close() {
        if (client != null) {
            client.close();
            client = null;
        }
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
