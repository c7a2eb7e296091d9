package dev.blocknode.os.uevent;

import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.os.wait.DeviceWaitMode;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.DeviceWaiting;
import dev.blocknode.testing.LoopDevice;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real netlink path: attaching a loop device makes the kernel send block uevents, and a waiter for that
 * device's sysfs entry must wake on them, far sooner than its poll interval. And without the socket, the
 * polling fallback still finds the device.
 */
@Tag("host")
class KernelEventsHostTest {

    private static final Duration SLOW_POLL = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    @Test
    void aWaiterForANewLoopDeviceWakesOnItsUeventNotItsPoll() throws Exception {
        try (DeviceWaiting waiting = DeviceWaiting.start(DeviceWaitMode.EVENTS, Optional.of(SLOW_POLL),
                NetlinkUeventSource::open)) {
            assertTrue(waiting.eventDriven(), "the uevent socket opened");
            long latencyMillis = attachWhileWaiting(waiting.waiter(), "events");
            assertTrue(latencyMillis < 1_000, "found " + latencyMillis + " ms after the attach with a "
                    + SLOW_POLL.toSeconds() + " s poll behind the events");
        }
    }

    @Test
    void withoutTheSocketTheFallbackPollFindsTheDevice() throws Exception {
        Duration poll = Duration.ofMillis(200);
        try (DeviceWaiting waiting = DeviceWaiting.start(DeviceWaitMode.EVENTS, Optional.of(poll), () -> {
            throw new NativeIOException("socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)", null, 1, "EPERM",
                    "Operation not permitted");
        })) {
            assertFalse(waiting.eventDriven());
            long latencyMillis = attachWhileWaiting(waiting.waiter(), "poll");
            assertTrue(latencyMillis < 10_000, latencyMillis + " ms");
        }
    }

    /**
     * Waits (on this thread) for a loop device over a new backing file while another thread attaches it once
     * this one pauses. Returns the ms from the end of {@code losetup} until the waiter had the device: negative
     * when the waiter saw it before losetup even exited.
     */
    private long attachWhileWaiting(DeviceWaiter waiter, String label) throws Exception {
        String name = "uevent-" + label;
        Path backing = dir.resolve(name + ".img");
        Thread waiting = Thread.currentThread();
        CompletableFuture<LoopDevice> attached = new CompletableFuture<>();
        long[] attachedAt = new long[1];
        Thread attacher = Thread.ofPlatform().start(() -> {
            try {
                // Only once the waiter has looked and is in its (long) pause, so the wake-up is what is measured.
                while (waiting.getState() != Thread.State.TIMED_WAITING) {
                    Thread.onSpinWait();
                }
                LoopDevice loop = LoopDevice.create(dir, name, 1 << 20);
                attachedAt[0] = System.nanoTime();
                attached.complete(loop);
            } catch (IOException | RuntimeException e) {
                attached.completeExceptionally(e);
            }
        });
        long foundAt;
        try {
            waiter.within(Duration.ofSeconds(30), "a loop device over " + backing, () -> loopOver(backing));
            foundAt = System.nanoTime();
        } finally {
            attacher.join();
        }
        try (LoopDevice loop = attached.get(5, TimeUnit.SECONDS)) {
            long latencyMillis = (foundAt - attachedAt[0]) / 1_000_000;
            System.out.println("KernelEventsHostTest " + label + ": " + loop.device() + " found "
                    + latencyMillis + " ms after losetup exited");
            return latencyMillis;
        }
    }

    /** The loop device whose sysfs backing_file names the file (read independently of the code under test). */
    private static Optional<String> loopOver(Path backing) throws IOException {
        try (DirectoryStream<Path> loops = Files.newDirectoryStream(Path.of("/sys/block"), "loop*")) {
            for (Path loop : loops) {
                Path backingFile = loop.resolve("loop/backing_file");
                try {
                    if (Files.readString(backingFile).strip().equals(backing.toString())) {
                        return Optional.of(loop.getFileName().toString());
                    }
                } catch (IOException notBound) {
                    // not attached, or detached meanwhile
                }
            }
        }
        return Optional.empty();
    }
}
