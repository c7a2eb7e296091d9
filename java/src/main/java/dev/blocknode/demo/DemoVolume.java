package dev.blocknode.demo;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.csi.v1.VolumeUsage;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.transport.local.LocalTransport;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The embedded demo of {@code make run}: a loop device over a sparse file, staged and published through
 * the plugin's own socket exactly as kubelet would (same paths, same calls), and torn down again.
 */
public final class DemoVolume implements AutoCloseable {

    public static final String VOLUME_ID = "demo-volume";
    private static final long SIZE_BYTES = 256L << 20;

    private final CommandRunner commands;
    private final Path socket;
    private final Path image;
    private final String loopDevice;
    private final Path stagingPath;
    private final Path targetPath;
    private boolean published;
    private boolean staged;

    private DemoVolume(CommandRunner commands, Path socket, Path image, String loopDevice, Path stagingPath,
                       Path targetPath) {
        this.commands = commands;
        this.socket = socket;
        this.image = image;
        this.loopDevice = loopDevice;
        this.stagingPath = stagingPath;
        this.targetPath = targetPath;
    }

    /** Creates the loop device, then stages and publishes it with kubelet's path layout. */
    public static DemoVolume create(CommandRunner commands, Path socket, Path workDir, Path kubeletRoot,
                                    String driverName) throws IOException {
        Files.createDirectories(workDir);
        Path image = workDir.resolve("demo-volume.img");
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(SIZE_BYTES); // sparse: costs no disk until written
        }
        String loop = commands.runChecked(Command.of("losetup", "--find", "--show", image.toString()))
                .stdout().strip();
        Path staging = kubeletRoot.resolve("plugins/kubernetes.io/csi").resolve(driverName)
                .resolve(sha256(VOLUME_ID)).resolve("globalmount");
        Path target = kubeletRoot.resolve("pods/00000000-0000-4000-8000-000000000001/volumes/kubernetes.io~csi")
                .resolve("demo-pv/mount");
        Files.createDirectories(staging);
        Files.createDirectories(target.getParent());
        DemoVolume demo = new DemoVolume(commands, socket, image, loop, staging, target);
        try {
            demo.stageAndPublish();
        } catch (RuntimeException e) {
            try {
                demo.close();
            } catch (IOException | RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
        return demo;
    }

    private void stageAndPublish() {
        VolumeCapability capability = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
        try (CsiClient client = new CsiClient(socket)) {
            client.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                    .setVolumeId(VOLUME_ID)
                    .setStagingTargetPath(stagingPath.toString())
                    .setVolumeCapability(capability)
                    .putVolumeContext(LocalTransport.DEVICE_PATH, loopDevice)
                    .build());
            staged = true;
            client.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                    .setVolumeId(VOLUME_ID)
                    .setStagingTargetPath(stagingPath.toString())
                    .setTargetPath(targetPath.toString())
                    .setVolumeCapability(capability)
                    .build());
            published = true;
        }
    }

    public String describe() {
        try (CsiClient client = new CsiClient(socket)) {
            NodeGetVolumeStatsResponse stats = client.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                    .setVolumeId(VOLUME_ID).setVolumePath(targetPath.toString()).build());
            VolumeUsage bytes = stats.getUsage(0);
            return """
                    demo volume %s is staged and published:
                      device        %s (backed by %s)
                      staging path  %s
                      pod path      %s  <- write files here
                      usage         %d of %d bytes used, condition: %s
                    """.formatted(VOLUME_ID, loopDevice, image, stagingPath, targetPath, bytes.getUsed(),
                    bytes.getTotal(), stats.getVolumeCondition().getMessage());
        }
    }

    /** Unpublishes, unstages, detaches the loop device and deletes its backing file. */
    @Override
    public void close() throws IOException {
        try (CsiClient client = new CsiClient(socket)) {
            if (published) {
                client.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(VOLUME_ID).setTargetPath(targetPath.toString()).build());
                published = false;
            }
            if (staged) {
                client.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(VOLUME_ID).setStagingTargetPath(stagingPath.toString()).build());
                staged = false;
            }
        } finally {
            try {
                commands.runChecked(Command.of("losetup", "--detach", loopDevice));
            } catch (CommandException e) {
                throw new IOException("cannot detach demo loop device " + loopDevice + ": " + e.getMessage(), e);
            }
            Files.deleteIfExists(image);
        }
    }

    private static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
