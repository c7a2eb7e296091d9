package dev.blocknode.lifecycle;

import dev.blocknode.csi.v1.VolumeCapability;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.state.RecordStore;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static dev.blocknode.testing.CsiRequests.block;
import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two volume ids are never staged on one device. A published raw block volume holds no
 * mount and no holder, so the in-use check (an O_EXCL open) sees nothing: what refuses the second id is the
 * first one's staging record, compared by device number, whatever path the second names (the same one, or a
 * node made with mknod for the same device number).
 */
@Tag("host")
class OneVolumePerDeviceHostTest {

    private static final long SIZE = 16L << 20;

    /** vG through vD's own device path, or through a node made with mknod for the same number; ext4 or block. */
    @ParameterizedTest(name = "alias={0} block={1}")
    @CsvSource({"false,false", "false,true", "true,false", "true,true"})
    void aSecondVolumeOnAPublishedBlockVolumesDeviceIsRefusedAndItsDataStays(boolean throughAlias, boolean asBlock)
            throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            var node = plugin.client().node();
            LoopDevice loop = plugin.newLoopDevice("twin", SIZE);
            Path stagingD = plugin.stagingPath("vD");
            Path target = plugin.targetPath("pod-d", "vD");
            node.nodeStageVolume(stage("vD", loop.device(), stagingD, block()));
            node.nodePublishVolume(publish("vD", stagingD, target, block(), false));
            byte[] data = new byte[256 << 10];
            new Random(27).nextBytes(data);
            try (RandomAccessFile out = new RandomAccessFile(target.toFile(), "rw")) {
                out.seek(2L << 20); // past the first MiB, which the blank-device probe reads
                out.write(data);
                out.getFD().sync();
            }
            byte[] before = sha256(loop.device());
            Process holder = holdOpen(target);
            Path aliasDir = Files.createTempDirectory(Path.of("/dev"), "bn-twin-");
            try {
                DeviceNumber number = plugin.host().mounter().stat(loop.device()).rdev();
                Path alias = aliasDir.resolve("alias");
                new ProcessCommandRunner().runChecked(Command.of("mknod", alias.toString(), "b",
                        Long.toString(number.major()), Long.toString(number.minor())));
                Path stagingG = plugin.stagingPath("vG");
                Path named = throughAlias ? alias : loop.device();
                VolumeCapability cap = asBlock ? block() : mount("ext4");
                String what = (cap.hasBlock() ? "block" : "ext4") + " through " + named;
                StatusRuntimeException refused = assertThrows(StatusRuntimeException.class,
                        () -> node.nodeStageVolume(stage("vG", named, stagingG, cap)), what);
                assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), what + ": "
                        + refused.getMessage());
                String message = refused.getStatus().getDescription();
                assertTrue(message.contains("volume vD") && message.contains(number.toString()),
                        what + ": the refusal names the other volume and the device: " + message);
                assertArrayEquals(before, sha256(loop.device()), what + ": vD's device, byte for byte");
                assertEquals(Optional.empty(), new RecordStore(plugin.stateDir()).load("vG"),
                        what + ": the refused volume has no record");
                assertEquals(1, recordFiles(plugin), what + ": vD's record only");
                assertFalse(LinuxNative.isMountPoint(stagingG.toString()), what + ": nothing mounted");
                assertTrue(holder.isAlive(), "the pod's process still holds vD's device");
                node.nodeUnstageVolume(unstage("vG", stagingG)); // kubelet's cleanup: vG has nothing to undo
                assertArrayEquals(before, sha256(loop.device()));
            } finally {
                holder.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                try (Stream<Path> left = Files.list(aliasDir)) {
                    for (Path file : left.toList()) {
                        Files.delete(file);
                    }
                }
                Files.delete(aliasDir);
            }
            node.nodeUnpublishVolume(unpublish("vD", target));
            node.nodeUnstageVolume(unstage("vD", stagingD));
            assertEquals(0, recordFiles(plugin));
        }
    }

    /**
     * Two stages of different ids on one device at once (the per-volume guard does not serialize them): exactly
     * one is staged, the other is refused naming it. Several rounds, so that an unlocked check-then-record would
     * be caught between the two.
     */
    @Test
    void twoVolumesStagedAtOnceOnOneDeviceExactlyOneSucceeds() throws Exception {
        try (PluginHarness plugin = PluginHarness.start();
             ExecutorService pool = Executors.newFixedThreadPool(2)) {
            var node = plugin.client().node();
            LoopDevice loop = plugin.newLoopDevice("race", SIZE);
            for (int round = 0; round < 8; round++) {
                List<String> ids = List.of("r" + round + "-a", "r" + round + "-b");
                CountDownLatch start = new CountDownLatch(1);
                List<Future<Optional<StatusRuntimeException>>> stages = new ArrayList<>();
                for (String id : ids) {
                    Path staging = plugin.stagingPath(id);
                    stages.add(pool.submit(() -> {
                        start.await();
                        try {
                            node.nodeStageVolume(stage(id, loop.device(), staging, block()));
                            return Optional.empty();
                        } catch (StatusRuntimeException refused) {
                            return Optional.of(refused);
                        }
                    }));
                }
                start.countDown();
                List<String> staged = new ArrayList<>();
                List<StatusRuntimeException> refusals = new ArrayList<>();
                for (int i = 0; i < ids.size(); i++) {
                    Optional<StatusRuntimeException> outcome = stages.get(i).get(2, TimeUnit.MINUTES);
                    if (outcome.isEmpty()) {
                        staged.add(ids.get(i));
                    } else {
                        refusals.add(outcome.get());
                    }
                }
                for (String id : ids) {
                    node.nodeUnstageVolume(unstage(id, plugin.stagingPath(id)));
                }
                assertEquals(1, staged.size(), "round " + round + ": exactly one of " + ids + " is staged, not "
                        + staged + " (refusals: " + refusals + ")");
                StatusRuntimeException refused = refusals.getFirst();
                assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode(), refused.getMessage());
                assertTrue(refused.getStatus().getDescription().contains("volume " + staged.getFirst()),
                        refused.getMessage());
                assertEquals(0, recordFiles(plugin), "round " + round + ": no record is left");
            }
        }
    }

    /**
     * One volume per staging path too: a block volume leaves no mount there for the mount check to find, and two
     * records at one staging path would refuse each other's unstage for ever.
     */
    @Test
    void aSecondVolumeAtABlockVolumesStagingPathIsRefused() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            var node = plugin.client().node();
            LoopDevice first = plugin.newLoopDevice("first", SIZE);
            LoopDevice second = plugin.newLoopDevice("second", SIZE);
            Path staging = plugin.stagingPath("vY");
            node.nodeStageVolume(stage("vY", first.device(), staging, block()));

            StatusRuntimeException refused = assertThrows(StatusRuntimeException.class,
                    () -> node.nodeStageVolume(stage("vX", second.device(), staging, block())));
            assertEquals(Status.Code.ALREADY_EXISTS, refused.getStatus().getCode(), refused.getMessage());
            assertTrue(refused.getStatus().getDescription().contains("volume vY"), refused.getMessage());
            assertEquals(Optional.empty(), new RecordStore(plugin.stateDir()).load("vX"));
            assertEquals(1, recordFiles(plugin));

            node.nodeUnstageVolume(unstage("vX", staging)); // vX has nothing here: a no-op
            node.nodeUnstageVolume(unstage("vY", staging));
            assertEquals(0, recordFiles(plugin));
        }
    }

    /** A process (the pod) that holds {@code device} open for read and write, as a database would. */
    private static Process holdOpen(Path device) throws IOException {
        Process process = new ProcessBuilder("sh", "-c", "exec 3<>\"$0\"; exec sleep 600", device.toString())
                .redirectErrorStream(true).start();
        try {
            for (int i = 0; i < 100 && !holds(process, device); i++) {
                Thread.sleep(20);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        assertTrue(holds(process, device), "the holder opened " + device);
        return process;
    }

    private static boolean holds(Process process, Path device) {
        try {
            return Files.isSymbolicLink(Path.of("/proc/" + process.pid() + "/fd/3"))
                    && Files.readSymbolicLink(Path.of("/proc/" + process.pid() + "/fd/3")).equals(device);
        } catch (IOException e) {
            return false;
        }
    }

    private static long recordFiles(PluginHarness plugin) throws IOException {
        try (Stream<Path> files = Files.list(plugin.stateDir().resolve("volumes"))) {
            return files.count();
        }
    }

    private static byte[] sha256(Path device) throws Exception {
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        byte[] buffer = new byte[1 << 20];
        try (RandomAccessFile in = new RandomAccessFile(device.toFile(), "r")) {
            for (int read; (read = in.read(buffer)) > 0; ) {
                digest.update(buffer, 0, read);
            }
        }
        return digest.digest();
    }
}
