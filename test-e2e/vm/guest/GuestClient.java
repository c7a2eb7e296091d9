import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import io.grpc.StatusRuntimeException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * A minimal CSI client for the VM tier's guest scripts: the calls kubelet makes, on the plugin's socket.
 *
 * <pre>
 *   GuestClient SOCKET COMMAND ARGS...    one call, then exit (0, or 1 with the gRPC status on stderr)
 *   GuestClient SOCKET serve              one command per line on stdin, one reply per line on stdout:
 *                                         "ok MS" or "error MS CODE: DESCRIPTION"
 *
 *   probe
 *   stage     VOLUME_ID DEVICE STAGING_PATH FSTYPE   (volume_context devicePath=DEVICE: local transport)
 *   publish   VOLUME_ID STAGING_PATH TARGET_PATH FSTYPE
 *   unpublish VOLUME_ID TARGET_PATH
 *   unstage   VOLUME_ID STAGING_PATH
 * </pre>
 *
 * "serve" exists because a JVM start costs seconds under emulation: a scenario starts one client and
 * times each call alone. Like kubelet, stage creates the staging directory and publish creates the
 * target's parent; the plugin creates the target itself.
 */
public final class GuestClient {

    private static final long CALL_TIMEOUT_SECONDS = 120;

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: GuestClient SOCKET (serve | probe | stage | publish | unpublish | unstage) ARGS...");
            System.exit(2);
        }
        try (CsiClient client = new CsiClient(Path.of(args[0]))) {
            if (args[1].equals("serve")) {
                serve(client);
                return;
            }
            try {
                call(client, Arrays.copyOfRange(args, 1, args.length));
            } catch (StatusRuntimeException e) {
                System.err.println(describe(e));
                System.exit(1);
            }
        }
    }

    private static void serve(CsiClient client) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.strip().split("\\s+");
            if (words.length == 0 || words[0].isEmpty()) {
                continue;
            }
            long start = System.nanoTime();
            String reply;
            try {
                call(client, words);
                reply = "ok " + millisSince(start);
            } catch (StatusRuntimeException e) {
                reply = "error " + millisSince(start) + " " + describe(e);
            } catch (RuntimeException e) {
                reply = "error " + millisSince(start) + " CLIENT: " + e;
            }
            System.out.println(reply.replace('\n', ' '));
            System.out.flush();
        }
    }

    private static void call(CsiClient client, String[] words) throws Exception {
        var node = client.node().withDeadlineAfter(CALL_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        switch (words[0]) {
            case "probe" -> {
                expect(words, 1);
                var probe = client.identity().withDeadlineAfter(CALL_TIMEOUT_SECONDS, TimeUnit.SECONDS)
                        .probe(ProbeRequest.getDefaultInstance());
                if (probe.hasReady() && !probe.getReady().getValue()) {
                    throw new IllegalStateException("the plugin reports not ready");
                }
            }
            case "stage" -> {
                expect(words, 5);
                Files.createDirectories(Path.of(words[3]));
                node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(words[1])
                        .putVolumeContext("devicePath", words[2])
                        .setStagingTargetPath(words[3])
                        .setVolumeCapability(mount(words[4]))
                        .build());
            }
            case "publish" -> {
                expect(words, 5);
                Files.createDirectories(Path.of(words[3]).getParent());
                node.nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                        .setVolumeId(words[1])
                        .setStagingTargetPath(words[2])
                        .setTargetPath(words[3])
                        .setVolumeCapability(mount(words[4]))
                        .build());
            }
            case "unpublish" -> {
                expect(words, 3);
                node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(words[1]).setTargetPath(words[2]).build());
            }
            case "unstage" -> {
                expect(words, 3);
                node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(words[1]).setStagingTargetPath(words[2]).build());
            }
            default -> throw new IllegalArgumentException("unknown command " + words[0]);
        }
    }

    private static VolumeCapability mount(String fsType) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    private static void expect(String[] words, int count) {
        if (words.length != count) {
            throw new IllegalArgumentException(words[0] + " takes " + (count - 1) + " arguments, got "
                    + (words.length - 1));
        }
    }

    private static String describe(StatusRuntimeException e) {
        return e.getStatus().getCode() + ": " + e.getStatus().getDescription();
    }

    private static long millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
