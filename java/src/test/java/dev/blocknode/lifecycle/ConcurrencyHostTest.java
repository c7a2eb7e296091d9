package dev.blocknode.lifecycle;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.testing.LoopDevice;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.blocknode.testing.CsiRequests.mount;
import static dev.blocknode.testing.CsiRequests.publish;
import static dev.blocknode.testing.CsiRequests.stage;
import static dev.blocknode.testing.CsiRequests.unpublish;
import static dev.blocknode.testing.CsiRequests.unstage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One operation per volume at a time; many volumes at once. */
@Tag("host")
class ConcurrencyHostTest {

    private static final long SIZE = 64L << 20;

    /** Runs commands for real, but holds mkfs until the test lets it go. */
    private static final class GatedMkfs implements CommandRunner {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final CommandRunner real = new ProcessCommandRunner();

        @Override
        public CommandResult run(Command command) throws CommandException {
            if (command.program().startsWith("mkfs")) {
                entered.countDown();
                try {
                    if (!release.await(60, TimeUnit.SECONDS)) {
                        throw new CommandException(command, null, "test gate never opened", null);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return real.run(command);
        }
    }

    @Test
    void aSecondCallOnABusyVolumeIsAbortedAtOnce() throws Exception {
        GatedMkfs gate = new GatedMkfs();
        Host real = Host.real();
        Host gated = new Host(real.paths(), gate, real.mounter(), real.blockDevices());
        try (PluginHarness plugin = PluginHarness.start(gated)) {
            LoopDevice loop = plugin.newLoopDevice("busy", SIZE);
            Path staging = plugin.stagingPath("busy");
            CompletableFuture<Void> first = CompletableFuture.runAsync(() ->
                    plugin.client().node().nodeStageVolume(stage("busy", loop.device(), staging, mount("ext4"))));
            assertTrue(gate.entered.await(60, TimeUnit.SECONDS), "first stage reached mkfs");

            StatusRuntimeException second = assertThrows(StatusRuntimeException.class, () -> plugin.client().node()
                    .nodeStageVolume(stage("busy", loop.device(), staging, mount("ext4"))));
            assertEquals(Status.Code.ABORTED, second.getStatus().getCode());
            assertTrue(second.getStatus().getDescription().contains("NodeStageVolume"), second.getMessage());
            StatusRuntimeException unstage = assertThrows(StatusRuntimeException.class,
                    () -> plugin.client().node().nodeUnstageVolume(unstage("busy", staging)));
            assertEquals(Status.Code.ABORTED, unstage.getStatus().getCode());

            gate.release.countDown();
            first.get(60, TimeUnit.SECONDS);
            assertTrue(LinuxNative.isMountPoint(staging.toString()), "the first call completed");
            plugin.client().node().nodeUnstageVolume(unstage("busy", staging));
        }
    }

    @Test
    void twentyVolumesStageAndPublishInParallel() throws Exception {
        int count = 20;
        try (PluginHarness plugin = PluginHarness.start();
             ExecutorService pool = Executors.newFixedThreadPool(count)) {
            List<LoopDevice> loops = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                loops.add(plugin.newLoopDevice("par" + i, SIZE));
            }
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> ups = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String id = "par" + i;
                Path device = loops.get(i).device();
                Path staging = plugin.stagingPath(id);
                Path target = plugin.targetPath("pod-" + i, id);
                ups.add(pool.submit(() -> {
                    start.await();
                    plugin.client().node().nodeStageVolume(stage(id, device, staging, mount("ext4")));
                    plugin.client().node().nodePublishVolume(publish(id, staging, target, mount("ext4"), false));
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : ups) {
                f.get(5, TimeUnit.MINUTES);
            }
            for (int i = 0; i < count; i++) {
                Path target = plugin.targetPath("pod-" + i, "par" + i);
                assertTrue(LinuxNative.isMountPoint(target.toString()), target + " is published");
                java.nio.file.Files.writeString(target.resolve("id"), "par" + i);
            }
            List<Future<?>> downs = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String id = "par" + i;
                Path staging = plugin.stagingPath(id);
                Path target = plugin.targetPath("pod-" + i, id);
                downs.add(pool.submit(() -> {
                    plugin.client().node().nodeUnpublishVolume(unpublish(id, target));
                    plugin.client().node().nodeUnstageVolume(unstage(id, staging));
                    return null;
                }));
            }
            for (Future<?> f : downs) {
                f.get(5, TimeUnit.MINUTES);
            }
        }
    }
}
