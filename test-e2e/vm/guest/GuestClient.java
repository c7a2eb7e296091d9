import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetStorageHealthRequest;
import dev.blocknode.csi.v1.NodeGetStorageHealthResponse;
import dev.blocknode.csi.v1.NodeGetVolumeHealthRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.csi.v1.VolumeHealth;
import dev.blocknode.csi.v1.VolumeUsage;
import io.grpc.StatusRuntimeException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
 *
 *   stagex    VOLUME_ID STAGING_PATH ACCESS [KEY=VALUE | secret:KEY=VALUE | flag:MOUNT_FLAG]...
 *             ACCESS: ext4, xfs, mount (no fs_type) or block; KEY=VALUE goes into volume_context (any
 *             transport), secret:KEY=VALUE into the NodeStage secrets (send these on stdin, in serve mode,
 *             so that no secret is ever in an argv), flag:MOUNT_FLAG into the capability's mount_flags
 *             (as kubelet writes them: flag:context="system_u:object_r:container_file_t:s0:c1,c2")
 *   publishx  VOLUME_ID STAGING_PATH TARGET_PATH ACCESS [flag:MOUNT_FLAG]...
 *   stats     VOLUME_ID VOLUME_PATH [STAGING_PATH]   replies "ok MS used=.. total=.. available=..
 *             inodes-used=.. abnormal=BOOL message=TEXT" (what was reported)
 *   expand    VOLUME_ID VOLUME_PATH STAGING_PATH [secret:KEY=VALUE]...   NodeExpandVolume (no capacity
 *             range), the secrets as stagex's (on stdin); replies "ok MS capacity=BYTES"
 *   parallel  COMMAND ARGS... & COMMAND ARGS... [& ...]   the commands at once, each on its own thread;
 *             "ok MS" if all succeeded, else "error MS ..." naming the first failure; each command's own
 *             reply follows in brackets, in order
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
            System.err.println("usage: GuestClient SOCKET (serve | probe | stage | publish | unpublish | unstage | stagex"
                    + " | publishx | stats | expand | health | storagehealth) ARGS...");
            System.exit(2);
        }
        try (CsiClient client = new CsiClient(Path.of(args[0]))) {
            if (args[1].equals("serve")) {
                serve(client);
                return;
            }
            try {
                String details = call(client, Arrays.copyOfRange(args, 1, args.length));
                if (!details.isEmpty()) {
                    System.out.println(details);
                }
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
            String reply = words[0].equals("parallel") ? parallel(client, words) : reply(client, words);
            System.out.println(reply.replace('\n', ' '));
            System.out.flush();
        }
    }

    /** One call: "ok MS[ DETAILS]" or "error MS CODE: DESCRIPTION". */
    private static String reply(CsiClient client, String[] words) {
        long start = System.nanoTime();
        try {
            String details = call(client, words);
            return "ok " + millisSince(start) + (details.isEmpty() ? "" : " " + details);
        } catch (StatusRuntimeException e) {
            return "error " + millisSince(start) + " " + describe(e);
        } catch (Exception e) {
            return "error " + millisSince(start) + " CLIENT: " + e;
        }
    }

    /** "parallel A ... & B ...": every command on its own thread, started together. */
    private static String parallel(CsiClient client, String[] words) {
        long start = System.nanoTime();
        List<List<String>> commands = new ArrayList<>();
        List<String> current = new ArrayList<>();
        for (String word : Arrays.copyOfRange(words, 1, words.length)) {
            if (word.equals("&")) {
                commands.add(current);
                current = new ArrayList<>();
            } else {
                current.add(word);
            }
        }
        commands.add(current);
        List<CompletableFuture<String>> replies = new ArrayList<>();
        for (List<String> command : commands) {
            String[] args = command.toArray(String[]::new);
            replies.add(CompletableFuture.supplyAsync(() -> args.length == 0 ? "error 0 CLIENT: empty command"
                    : reply(client, args), runnable -> new Thread(runnable).start()));
        }
        StringBuilder each = new StringBuilder();
        String firstError = null;
        for (CompletableFuture<String> future : replies) {
            String one = future.join();
            each.append(" [").append(one).append(']');
            if (firstError == null && !one.startsWith("ok")) {
                firstError = one;
            }
        }
        return (firstError == null ? "ok " + millisSince(start) : "error " + millisSince(start) + " first failure: "
                + firstError) + each;
    }

    /** Makes one call; returns what it reported, if anything ("" otherwise). */
    private static String call(CsiClient client, String[] words) throws Exception {
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
            case "stagex" -> {
                if (words.length < 4) {
                    throw new IllegalArgumentException("stagex takes VOLUME_ID STAGING_PATH ACCESS [KEY=VALUE]...");
                }
                Files.createDirectories(Path.of(words[2]));
                List<String> rest = Arrays.asList(Arrays.copyOfRange(words, 4, words.length));
                NodeStageVolumeRequest.Builder request = NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(words[1])
                        .setStagingTargetPath(words[2])
                        .setVolumeCapability(capability(words[3], mountFlags(rest)));
                for (String pair : rest) {
                    if (pair.startsWith(FLAG)) {
                        continue;
                    }
                    boolean secret = pair.startsWith("secret:");
                    String keyValue = secret ? pair.substring("secret:".length()) : pair;
                    int eq = keyValue.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("not KEY=VALUE: " + (secret ? "secret:<redacted>" : pair));
                    }
                    if (secret) {
                        request.putSecrets(keyValue.substring(0, eq), keyValue.substring(eq + 1));
                    } else {
                        request.putVolumeContext(keyValue.substring(0, eq), keyValue.substring(eq + 1));
                    }
                }
                node.nodeStageVolume(request.build());
            }
            case "publishx" -> {
                if (words.length < 5) {
                    throw new IllegalArgumentException("publishx takes VOLUME_ID STAGING_PATH TARGET_PATH ACCESS"
                            + " [flag:MOUNT_FLAG]...");
                }
                List<String> rest = Arrays.asList(Arrays.copyOfRange(words, 5, words.length));
                if (mountFlags(rest).size() != rest.size()) {
                    throw new IllegalArgumentException("publishx takes only flag:MOUNT_FLAG after ACCESS");
                }
                Files.createDirectories(Path.of(words[3]).getParent());
                node.nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                        .setVolumeId(words[1])
                        .setStagingTargetPath(words[2])
                        .setTargetPath(words[3])
                        .setVolumeCapability(capability(words[4], mountFlags(rest)))
                        .build());
            }
            case "stats" -> {
                if (words.length != 3 && words.length != 4) {
                    throw new IllegalArgumentException("stats takes VOLUME_ID VOLUME_PATH [STAGING_PATH]");
                }
                NodeGetVolumeStatsRequest.Builder request = NodeGetVolumeStatsRequest.newBuilder()
                        .setVolumeId(words[1]).setVolumePath(words[2]);
                if (words.length == 4) {
                    request.setStagingTargetPath(words[3]);
                }
                NodeGetVolumeStatsResponse stats = node.nodeGetVolumeStats(request.build());
                StringBuilder out = new StringBuilder();
                for (VolumeUsage usage : stats.getUsageList()) {
                    String prefix = usage.getUnit() == VolumeUsage.Unit.INODES ? "inodes-" : "";
                    out.append(prefix).append("used=").append(usage.getUsed()).append(' ')
                            .append(prefix).append("total=").append(usage.getTotal()).append(' ')
                            .append(prefix).append("available=").append(usage.getAvailable()).append(' ');
                }
                if (stats.hasVolumeCondition()) {
                    out.append("abnormal=").append(stats.getVolumeCondition().getAbnormal())
                            .append(" message=").append(stats.getVolumeCondition().getMessage());
                } else {
                    out.append("condition=none");
                }
                return out.toString().strip();
            }
            case "expand" -> {
                if (words.length < 4) {
                    throw new IllegalArgumentException("expand takes VOLUME_ID VOLUME_PATH STAGING_PATH"
                            + " [secret:KEY=VALUE]...");
                }
                NodeExpandVolumeRequest.Builder request = NodeExpandVolumeRequest.newBuilder()
                        .setVolumeId(words[1]).setVolumePath(words[2]).setStagingTargetPath(words[3]);
                for (int i = 4; i < words.length; i++) {
                    String keyValue = words[i].startsWith("secret:") ? words[i].substring("secret:".length()) : "";
                    int eq = keyValue.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("expand takes only secret:KEY=VALUE after its paths");
                    }
                    request.putSecrets(keyValue.substring(0, eq), keyValue.substring(eq + 1));
                }
                return "capacity=" + node.nodeExpandVolume(request.build()).getCapacityBytes();
            }
            case "health" -> {
                if (words.length != 2 && words.length != 3) {
                    throw new IllegalArgumentException("health takes VOLUME_ID [PUBLISH_PATH]");
                }
                NodeGetVolumeHealthRequest.Builder request = NodeGetVolumeHealthRequest.newBuilder()
                        .setVolumeId(words[1]);
                if (words.length == 3) {
                    request.setVolumePublishPath(words[2]);
                }
                // One "Status/Reason" word per condition, "healthy" when there is none; then the messages.
                VolumeHealth health = node.nodeGetVolumeHealth(request.build()).getVolumeHealth();
                StringBuilder out = new StringBuilder();
                for (VolumeHealth.VolumeHealthEntry entry : health.getHealthStatusesList()) {
                    out.append(entry.getStatus()).append('/').append(entry.getReason()).append(' ');
                }
                out.append(health.getHealthStatusesCount() == 0 ? "healthy" : "|");
                for (VolumeHealth.VolumeHealthEntry entry : health.getHealthStatusesList()) {
                    out.append(' ').append(entry.getMessage());
                }
                return out.toString();
            }
            case "storagehealth" -> {
                NodeGetStorageHealthResponse health = node.nodeGetStorageHealth(
                        NodeGetStorageHealthRequest.getDefaultInstance());
                StringBuilder out = new StringBuilder();
                for (NodeGetStorageHealthResponse.StorageBackendHealth entry : health.getBackendHealthList()) {
                    out.append(entry.getStatus()).append('/').append(entry.getReason()).append(' ');
                }
                out.append(health.getBackendHealthCount() == 0 ? "healthy" : "|");
                for (NodeGetStorageHealthResponse.StorageBackendHealth entry : health.getBackendHealthList()) {
                    out.append(' ').append(entry.getMessage());
                }
                return out.toString();
            }
            default -> throw new IllegalArgumentException("unknown command " + words[0]);
        }
        return "";
    }

    private static final String FLAG = "flag:";

    /** The mount flags among a command's extra words (flag:MOUNT_FLAG), in order. */
    private static List<String> mountFlags(List<String> words) {
        return words.stream().filter(w -> w.startsWith(FLAG)).map(w -> w.substring(FLAG.length())).toList();
    }

    /** ACCESS with mount flags: a block volume takes none (CSI's BlockVolume has no field for them). */
    private static VolumeCapability capability(String access, List<String> flags) {
        VolumeCapability capability = capability(access);
        if (flags.isEmpty()) {
            return capability;
        }
        if (!capability.hasMount()) {
            throw new IllegalArgumentException("mount flags given for a block volume");
        }
        return capability.toBuilder().setMount(capability.getMount().toBuilder().addAllMountFlags(flags)).build();
    }

    /** ext4 / xfs / mount (no fs_type): a filesystem volume; block: a raw block volume. */
    private static VolumeCapability capability(String access) {
        return switch (access) {
            case "block" -> VolumeCapability.newBuilder()
                    .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                    .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                            .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                    .build();
            case "mount" -> mount("");
            default -> mount(access);
        };
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
