package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.testing.CsiRequests;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile writers under the kubelet root: while each path-taking RPC runs {@value #ROUNDS} times, another
 * thread exchanges one component of its path after another with a symlink to a watched directory outside the
 * root (renameat2 RENAME_EXCHANGE, in a tight loop), the way a pod with a hostPath under the root could. Each
 * call must either do its work inside the root or be refused; afterwards nothing outside was created,
 * mounted, unmounted or removed. The watched directory holds, for each component, what the rest of the path
 * would name there, with a tmpfs (or a bound file) at the leaf, so an escaped unmount or mount shows.
 */
@Tag("host")
class PathRaceHostTest {

    private static final int ROUNDS = 1000;
    /** xfs needs 300 MB at least; a grow costs a few ms, so fewer rounds than the others. */
    private static final long XFS_SIZE = 320L << 20;
    private static final int XFS_ROUNDS = 300;
    private static final int GROW_EVERY = 10;
    private static final Set<Status.Code> REFUSALS = Set.of(Status.Code.INVALID_ARGUMENT, Status.Code.NOT_FOUND,
            Status.Code.FAILED_PRECONDITION);

    private PluginHarness plugin;
    private Path outside;
    private LoopDevice loop;

    @BeforeEach
    void start() throws IOException {
        plugin = PluginHarness.start();
        outside = Files.createTempDirectory(Path.of("/tmp"), "bn-race-outside-");
        loop = plugin.newLoopDevice("race", 64L << 20);
    }

    @AfterEach
    void stop() throws IOException {
        try {
            for (Path mount : HostAssertions.mountsUnder(outside).stream()
                    .sorted(Comparator.comparingInt(Path::getNameCount).reversed()).toList()) {
                run("umount", mount.toString());
            }
            try (Stream<Path> files = Files.walk(outside)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        } finally {
            plugin.close();
        }
    }

    @Test
    void publishAndUnpublishOfAFilesystemStayInsideTheRoot() throws Exception {
        publishCycles(CsiRequests.mount("ext4"));
    }

    @Test
    void publishAndUnpublishOfABlockVolumeStayInsideTheRoot() throws Exception {
        publishCycles(CsiRequests.block());
    }

    @Test
    void stageAndUnstageOfAFilesystemStayInsideTheRoot() throws Exception {
        stageCycles(CsiRequests.mount("ext4"));
    }

    @Test
    void stageAndUnstageOfABlockVolumeStayInsideTheRoot() throws Exception {
        stageCycles(CsiRequests.block());
    }

    @Test
    void statsAndExpandOfAFilesystemStayInsideTheRoot() throws Exception {
        readCycles(CsiRequests.mount("ext4"));
    }

    @Test
    void statsAndExpandOfABlockVolumeStayInsideTheRoot() throws Exception {
        readCycles(CsiRequests.block());
    }

    /**
     * NodeExpandVolume of an xfs volume whose device has grown, while a component of its staging path
     * is swapped with a symlink to a directory outside the root where an outside xfs is mounted, on a device
     * larger than that filesystem (growing it would show). xfs_growfs found the mount by the staging path's name and
     * grew the outside filesystem; by descriptor, only the volume grows. The device grows again every
     * {@value #GROW_EVERY} rounds so that the grow itself, not only the check, races the swapper.
     */
    @Test
    void expandOfAnXfsGrowsTheVolumeAndNothingOutsideTheRoot() throws Exception {
        var node = plugin.client().node();
        LoopDevice volume = plugin.newLoopDevice("race-xfs", XFS_SIZE);
        LoopDevice outsideDevice = plugin.newLoopDevice("race-outside-xfs", 2 * XFS_SIZE);
        run("mkfs.xfs", "-q", "-d", "size=" + XFS_SIZE, outsideDevice.device().toString());
        Path staging = plugin.stagingPath("v-race-xfs");
        Path target = plugin.targetPath("pod-race", "v-race-xfs");
        VolumeCapability xfs = CsiRequests.mount("xfs");
        node.nodeStageVolume(CsiRequests.stage("v-race-xfs", volume.device(), staging, xfs));
        node.nodePublishVolume(CsiRequests.publish("v-race-xfs", staging, target, xfs, false));
        long volumeBefore = totalBlocks(target);
        Watched watched = new Watched(plugin.kubeletRoot(), staging, true, outsideDevice.device());
        Path outsideMount = HostAssertions.mountsUnder(outside).getFirst();
        long outsideBefore = totalBlocks(outsideMount);

        Codes codes = new Codes(Set.of(Status.Code.INVALID_ARGUMENT, Status.Code.NOT_FOUND), true);
        long deviceSize = XFS_SIZE;
        Swapper swapper = new Swapper(plugin.kubeletRoot(), staging, watched);
        try (swapper) {
            for (int round = 0; round < XFS_ROUNDS; round++) {
                swapper.swapComponent(round * swapper.components() / XFS_ROUNDS);
                if (round % GROW_EVERY == 0) {
                    deviceSize += 32L << 20;
                    volume.grow(deviceSize);
                }
                Path asked = round % 2 == 0 ? target : staging;
                long expected = deviceSize;
                codes.call("expand", () -> assertEquals(expected, node.nodeExpandVolume(NodeExpandVolumeRequest
                        .newBuilder().setVolumeId("v-race-xfs").setVolumePath(asked.toString())
                        .setStagingTargetPath(staging.toString()).build()).getCapacityBytes()));
            }
        }
        assertTrue(swapper.swaps() > XFS_ROUNDS, "the swapper ran only " + swapper.swaps() + " times");
        assertEquals(outsideBefore, totalBlocks(outsideMount), "the xfs outside the root was grown");
        watched.assertUntouched();
        node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId("v-race-xfs")
                .setVolumePath(target.toString()).build());
        long volumeAfter = totalBlocks(target);
        assertTrue(volumeAfter >= volumeBefore + (deviceSize - XFS_SIZE) / 4096 * 9 / 10,
                "the volume grew from " + volumeBefore + " to only " + volumeAfter + " blocks");
        node.nodeUnpublishVolume(CsiRequests.unpublish("v-race-xfs", target));
        node.nodeUnstageVolume(CsiRequests.unstage("v-race-xfs", staging));
        codes.assertOnlyRefusalsAndSuccesses(XFS_ROUNDS);
    }

    /** statvfs f_blocks of the filesystem mounted at {@code path}, read independently of the plugin. */
    private static long totalBlocks(Path path) throws IOException {
        return Long.parseLong(new ProcessCommandRunner().runChecked(Command.of("stat", "-f", "-c", "%b",
                path.toString())).stdout().strip());
    }

    private void publishCycles(VolumeCapability capability) throws Exception {
        var node = plugin.client().node();
        Path staging = stagingFor(capability);
        node.nodeStageVolume(CsiRequests.stage("v-race", loop.device(), staging, capability));
        Path target = capability.hasBlock()
                ? blockTarget()
                : plugin.targetPath("pod-race", "v-race");
        Watched watched = new Watched(plugin.kubeletRoot(), target, !capability.hasBlock());
        Codes codes = new Codes();
        Swapper swapper = new Swapper(plugin.kubeletRoot(), target, watched);
        try (swapper) {
            for (int round = 0; round < ROUNDS; round++) {
                swapper.swapComponent(round * swapper.components() / ROUNDS);
                codes.call("publish", () -> node.nodePublishVolume(
                        CsiRequests.publish("v-race", staging, target, capability, false)));
                codes.call("unpublish", () -> node.nodeUnpublishVolume(CsiRequests.unpublish("v-race", target)));
            }
        }
        assertTrue(swapper.swaps() > ROUNDS, "the swapper ran only " + swapper.swaps() + " times");
        watched.assertUntouched();
        node.nodeUnpublishVolume(CsiRequests.unpublish("v-race", target));
        node.nodeUnstageVolume(CsiRequests.unstage("v-race", staging));
        codes.assertOnlyRefusalsAndSuccesses(ROUNDS);
    }

    private void stageCycles(VolumeCapability capability) throws Exception {
        var node = plugin.client().node();
        Path staging = stagingFor(capability);
        Watched watched = new Watched(plugin.kubeletRoot(), staging, true);
        Codes codes = new Codes();
        Swapper swapper = new Swapper(plugin.kubeletRoot(), staging, watched);
        try (swapper) {
            for (int round = 0; round < ROUNDS; round++) {
                swapper.swapComponent(round * swapper.components() / ROUNDS);
                codes.call("stage", () -> node.nodeStageVolume(
                        CsiRequests.stage("v-race", loop.device(), staging, capability)));
                codes.call("unstage", () -> node.nodeUnstageVolume(CsiRequests.unstage("v-race", staging)));
            }
        }
        assertTrue(swapper.swaps() > ROUNDS, "the swapper ran only " + swapper.swaps() + " times");
        watched.assertUntouched();
        node.nodeStageVolume(CsiRequests.stage("v-race", loop.device(), staging, capability));
        node.nodeUnstageVolume(CsiRequests.unstage("v-race", staging));
        codes.assertOnlyRefusalsAndSuccesses(ROUNDS);
    }

    private void readCycles(VolumeCapability capability) throws Exception {
        var node = plugin.client().node();
        Path staging = stagingFor(capability);
        Path target = capability.hasBlock() ? blockTarget() : plugin.targetPath("pod-race", "v-race");
        node.nodeStageVolume(CsiRequests.stage("v-race", loop.device(), staging, capability));
        node.nodePublishVolume(CsiRequests.publish("v-race", staging, target, capability, false));
        Codes codes = new Codes();
        for (Path path : List.of(target, staging)) {
            Watched watched = new Watched(plugin.kubeletRoot(), path, !capability.hasBlock() || path == staging);
            Swapper swapper = new Swapper(plugin.kubeletRoot(), path, watched);
            try (swapper) {
                for (int round = 0; round < ROUNDS; round++) {
                    swapper.swapComponent(round * swapper.components() / ROUNDS);
                    codes.call("stats", () -> node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                            .setVolumeId("v-race").setVolumePath(path.toString()).build()));
                    codes.call("expand", () -> node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
                            .setVolumeId("v-race").setVolumePath(path.toString()).build()));
                }
            }
            watched.assertUntouched();
        }
        node.nodeUnpublishVolume(CsiRequests.unpublish("v-race", target));
        node.nodeUnstageVolume(CsiRequests.unstage("v-race", staging));
        codes.assertOnlyRefusalsAndSuccesses(2 * ROUNDS);
    }

    private Path stagingFor(VolumeCapability capability) throws IOException {
        if (!capability.hasBlock()) {
            return plugin.stagingPath("v-race");
        }
        Path staging = plugin.kubeletRoot().resolve("plugins/kubernetes.io/csi/volumeDevices/staging/v-race");
        Files.createDirectories(staging);
        return staging;
    }

    private Path blockTarget() throws IOException {
        Path target = plugin.kubeletRoot().resolve("pods/pod-race/volumeDevices/kubernetes.io~csi/v-race");
        Files.createDirectories(target.getParent());
        return target;
    }

    private static void run(String... argv) throws IOException {
        new ProcessCommandRunner().runChecked(Command.of(argv));
    }

    /** How each RPC ended, by code; anything but OK or a refusal is a failure of the test. */
    private static final class Codes {
        private final Map<String, Map<Status.Code, Integer>> byCall = new java.util.TreeMap<>();
        private final Set<Status.Code> refusals;
        private final List<String> unexpected = new ArrayList<>();
        private final boolean deferred;

        Codes() {
            this(REFUSALS, false);
        }

        /** With {@code deferred}, an unexpected code fails {@link #assertOnlyRefusalsAndSuccesses}, not the call. */
        Codes(Set<Status.Code> refusals, boolean deferred) {
            this.refusals = refusals;
            this.deferred = deferred;
        }

        interface Call {
            void run();
        }

        Status.Code call(String name, Call call) {
            Status.Code code = Status.Code.OK;
            try {
                call.run();
            } catch (StatusRuntimeException e) {
                code = e.getStatus().getCode();
                if (!refusals.contains(code) && deferred) {
                    unexpected.add(name + " ended " + code + ": " + e.getStatus().getDescription());
                } else if (!refusals.contains(code)) {
                    throw new AssertionError(name + " under a racing writer ended " + code + ": "
                            + e.getStatus().getDescription(), e);
                }
            }
            byCall.computeIfAbsent(name, n -> new EnumMap<>(Status.Code.class)).merge(code, 1, Integer::sum);
            return code;
        }

        void assertOnlyRefusalsAndSuccesses(int atLeast) {
            System.out.println("PathRaceHostTest codes: " + byCall);
            assertEquals(List.of(), unexpected.stream().limit(3).toList(), unexpected.size()
                    + " calls under a racing writer ended otherwise than " + refusals + " or OK (the first 3 shown)");
            byCall.forEach((name, codes) -> {
                int total = codes.values().stream().mapToInt(i -> i).sum();
                assertTrue(total >= atLeast, "only " + total + " " + name + " calls were made");
                assertTrue(codes.containsKey(Status.Code.OK), name + " never succeeded: the race test raced nothing");
            });
        }
    }

    /**
     * For each component of a path, a directory outside the root holding the rest of the path, with a tmpfs
     * at the leaf (a directory) or a file bound onto the leaf (a file); what it holds and what is mounted in
     * it are compared at the end with what they were at the start.
     */
    private final class Watched {
        private final Path root;
        private final Path path;
        private final List<String> entriesBefore;
        private final List<Path> mountsBefore;

        Watched(Path root, Path path, boolean leafIsDirectory) throws IOException {
            this(root, path, leafIsDirectory, null);
        }

        /**
         * With {@code filesystem} (a device holding one), that filesystem is mounted wherever the rest of the path
         * would lead, instead of a tmpfs: for the last component too, whose link then leads onto it directly.
         */
        Watched(Path root, Path path, boolean leafIsDirectory, Path filesystem) throws IOException {
            this.root = root;
            this.path = path;
            Path relative = root.relativize(path);
            for (int k = 0; k < relative.getNameCount(); k++) {
                Path rest = relative.subpath(k, relative.getNameCount());
                Path home = home(k);
                Files.createDirectories(home);
                if (filesystem != null) {
                    Path leaf = rest.getNameCount() > 1 ? home.resolve(rest.subpath(1, rest.getNameCount())) : home;
                    Files.createDirectories(leaf);
                    run("mount", filesystem.toString(), leaf.toString());
                } else if (rest.getNameCount() > 1) {
                    Path leaf = home.resolve(rest.subpath(1, rest.getNameCount()));
                    Files.createDirectories(leaf.getParent());
                    if (leafIsDirectory) {
                        Files.createDirectories(leaf);
                        run("mount", "-t", "tmpfs", "-o", "size=1m", "bn-race", leaf.toString());
                    } else {
                        Files.createFile(leaf);
                        Path bait = Files.createFile(home.resolve("bait-" + k));
                        run("mount", "--bind", bait.toString(), leaf.toString());
                    }
                }
            }
            entriesBefore = entries();
            mountsBefore = HostAssertions.mountsUnder(outside);
        }

        /** Where the symlink that replaces component k points. */
        Path home(int k) {
            return outside.resolve(Integer.toString(k)).resolve(root.relativize(path).getName(k).toString());
        }

        void assertUntouched() throws IOException {
            assertEquals(mountsBefore, HostAssertions.mountsUnder(outside), "mounts outside the root changed");
            assertEquals(entriesBefore, entries(), "files outside the root changed");
        }

        private List<String> entries() throws IOException {
            try (Stream<Path> files = Files.walk(outside)) {
                return files.map(p -> outside.relativize(p) + (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) ? "/" : ""))
                        .sorted().toList();
            }
        }
    }

    /**
     * Exchanges one component of a path with a symlink to its watched home outside the root, over and over
     * (each exchange is atomic: the component is always either the real directory or the link), in a helper
     * process: renameat2(RENAME_EXCHANGE) has no Java API, and a process of its own races the plugin the way
     * a hostile pod would. The component can be changed between calls; closing stops it and puts the real
     * directory back.
     */
    private static final class Swapper implements AutoCloseable {
        private static final String SCRIPT = """
                import ctypes, os, select, sys
                libc = ctypes.CDLL(None, use_errno=True)
                pairs = [(a.encode(), b.encode()) for a, b in zip(sys.argv[1::2], sys.argv[2::2])]
                k, swaps = 0, 0
                def exchange(pair):
                    libc.renameat2(-100, pair[0], -100, pair[1], 2)
                while True:
                    if select.select([sys.stdin], [], [], 0)[0]:
                        line = sys.stdin.readline().strip()
                        if line in ("", "stop"):
                            break
                        k = int(line)
                        print("component", k, flush=True)
                    exchange(pairs[k])
                    exchange(pairs[k])
                    swaps += 1
                print("swaps", swaps, flush=True)
                """;

        private final List<Path> components = new ArrayList<>();
        private final List<Path> links = new ArrayList<>();
        private final Process process;
        private final java.io.BufferedReader output;
        private final java.io.Writer input;
        private int current = 0;
        private long swaps = -1;

        Swapper(Path root, Path path, Watched watched) throws IOException {
            Path relative = root.relativize(path);
            List<String> argv = new ArrayList<>(List.of("python3", "-c", SCRIPT));
            for (int k = 0; k < relative.getNameCount(); k++) {
                Path component = root.resolve(relative.subpath(0, k + 1));
                if (!Files.exists(component, LinkOption.NOFOLLOW_LINKS)) {
                    Files.createDirectories(component); // the leaf, before the plugin makes it: race its creation too
                }
                Path link = component.resolveSibling(component.getFileName() + ".bn-swap");
                Files.createSymbolicLink(link, watched.home(k));
                components.add(component);
                links.add(link);
                argv.add(component.toString());
                argv.add(link.toString());
            }
            process = new ProcessBuilder(argv).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            output = process.inputReader();
            input = process.outputWriter();
        }

        int components() {
            return links.size();
        }

        long swaps() {
            return swaps;
        }

        /** Moves the swapping to component k, returning once the swapper has moved. */
        void swapComponent(int k) throws IOException {
            if (k == current) {
                return;
            }
            current = k;
            input.write(k + "\n");
            input.flush();
            String answer = output.readLine();
            assertEquals("component " + k, answer, "the swapper did not move on");
        }

        @Override
        public void close() throws IOException, InterruptedException {
            input.write("stop\n");
            input.flush();
            String line;
            while ((line = output.readLine()) != null) {
                if (line.startsWith("swaps ")) {
                    swaps = Long.parseLong(line.substring("swaps ".length()));
                }
            }
            assertEquals(0, process.waitFor(), "the swapper failed");
            for (int k = 0; k < links.size(); k++) {
                restore(components.get(k), links.get(k));
            }
        }

        /**
         * Puts the real directory back under its name. A mount the plugin made while the directory was
         * swapped away went where the directory was, inside the root (by descriptor: that is the point), and
         * a mount point cannot be renamed: such mounts are the test's doing and are taken off here.
         */
        private static void restore(Path component, Path link) throws IOException {
            for (Path mount : HostAssertions.mountsUnder(link).stream()
                    .sorted(Comparator.comparingInt(Path::getNameCount).reversed()).toList()) {
                run("umount", mount.toString());
            }
            if (Files.isSymbolicLink(component) && !Files.isSymbolicLink(link)) {
                Path aside = component.resolveSibling(component.getFileName() + ".bn-aside");
                Files.move(component, aside);
                Files.move(link, component);
                Files.move(aside, link);
            }
            try (Stream<Path> files = Files.walk(link)) { // the link, or what the plugin left under its name
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }
}
