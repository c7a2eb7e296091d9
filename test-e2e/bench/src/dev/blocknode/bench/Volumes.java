package dev.blocknode.bench;

import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Loop-backed volumes laid out as kubelet lays them out, their CSI requests (built once, so the client's
 * timings hold no request building), and the host side: sparse files and loop devices through bnbench.
 */
final class Volumes {

    static final VolumeCapability EXT4 = VolumeCapability.newBuilder()
            .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
            .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                    .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
            .build();

    /** One volume of one plugin. */
    static final class Volume {
        final String id;
        final Path file;
        final Path staging;
        final Path target;
        Path device;
        NodeStageVolumeRequest stage;
        final NodePublishVolumeRequest publish;
        final NodeUnpublishVolumeRequest unpublish;
        final NodeUnstageVolumeRequest unstage;
        final NodeGetVolumeStatsRequest stats;

        Volume(String id, Path file, Path staging, Path target) {
            this.id = id;
            this.file = file;
            this.staging = staging;
            this.target = target;
            this.publish = NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                    .setVolumeCapability(EXT4).build();
            this.unpublish = NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                    .setTargetPath(target.toString()).build();
            this.unstage = NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(staging.toString()).build();
            this.stats = NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                    .setVolumePath(staging.toString()).build();
        }
    }

    private final Path images;
    private final Path helper;
    /** Every loop device attached and not yet detached, for the final cleanup. */
    private final Set<Volume> attached = new LinkedHashSet<>();

    Volumes(Path images, Path helper) throws IOException {
        this.images = images;
        this.helper = helper;
        Files.createDirectories(images);
    }

    /**
     * {@code count} volumes of {@code sizeBytes} (sparse, blank) on loop devices, with kubelet's directories
     * for them under the plugin's kubelet root: the staging path's parent and the target's parent exist,
     * the leaves are the plugin's to create.
     */
    List<Volume> create(PluginProcess plugin, String prefix, int count, long sizeBytes) throws IOException {
        List<Volume> volumes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String id = prefix + "-" + i;
            Path file = images.resolve(plugin.name + "-" + id + ".img");
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                raf.setLength(sizeBytes);
            }
            Path staging = plugin.kubelet.resolve("plugins/kubernetes.io/csi").resolve(PluginProcess.DRIVER)
                    .resolve(id).resolve("globalmount");
            Path target = plugin.kubelet.resolve("pods").resolve("pod-" + id)
                    .resolve("volumes/kubernetes.io~csi").resolve(id).resolve("mount");
            Files.createDirectories(staging.getParent());
            Files.createDirectories(target.getParent());
            volumes.add(new Volume(id, file, staging, target));
        }
        List<String> args = new ArrayList<>(List.of("loop-attach"));
        volumes.forEach(v -> args.add(v.file.toString()));
        List<String> devices = run(args);
        if (devices.size() != volumes.size()) {
            throw new IOException("bnbench loop-attach printed " + devices.size() + " devices for " + volumes.size()
                    + " files");
        }
        for (int i = 0; i < volumes.size(); i++) {
            Volume v = volumes.get(i);
            v.device = Path.of(devices.get(i));
            v.stage = NodeStageVolumeRequest.newBuilder().setVolumeId(v.id)
                    .setStagingTargetPath(v.staging.toString()).setVolumeCapability(EXT4)
                    .putVolumeContext("devicePath", v.device.toString()).build();
            attached.add(v);
        }
        return volumes;
    }

    /** Detaches the loop devices and deletes the files (after the plugin unstaged them). */
    void destroy(Collection<Volume> volumes) throws IOException {
        List<String> args = new ArrayList<>(List.of("loop-detach"));
        List<Volume> mine = volumes.stream().filter(attached::contains).toList();
        if (mine.isEmpty()) {
            return;
        }
        mine.forEach(v -> args.add(v.device.toString()));
        try {
            run(args);
        } finally {
            for (Volume v : mine) {
                attached.remove(v);
                Files.deleteIfExists(v.file);
            }
        }
    }

    /** Whatever is still attached (after a failure): the caller unmounts first. */
    void destroyAll() throws IOException {
        destroy(new ArrayList<>(attached));
    }

    /** Unpublishes and unstages through the plugin, {@code threads} at a time; failures are printed. */
    static int teardown(NodeGrpc.NodeBlockingStub node, List<Volume> volumes, int threads)
            throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (Volume v : volumes) {
                done.add(pool.submit(() -> {
                    node.nodeUnpublishVolume(v.unpublish);
                    node.nodeUnstageVolume(v.unstage);
                    return null;
                }));
            }
            int failed = 0;
            for (Future<?> f : done) {
                try {
                    f.get();
                } catch (Exception e) {
                    if (failed++ < 3) {
                        System.err.println("bench: teardown: " + e.getMessage());
                    }
                }
            }
            return failed;
        } finally {
            pool.shutdown();
            pool.awaitTermination(5, TimeUnit.MINUTES);
        }
    }

    List<String> run(List<String> args) throws IOException {
        return runHelper(helper, args);
    }

    static List<String> runHelper(Path helper, List<String> args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(helper.toString());
        command.addAll(args);
        return runCommand(command);
    }

    static List<String> runCommand(List<String> command) throws IOException {
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        byte[] out = process.getInputStream().readAllBytes();
        try {
            int rc = process.waitFor();
            if (rc != 0) {
                throw new IOException(String.join(" ", command.subList(0, Math.min(3, command.size())))
                        + " ... exited with " + rc);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        String text = new String(out, StandardCharsets.UTF_8).strip();
        return text.isEmpty() ? List.of() : List.of(text.split("\n"));
    }
}
