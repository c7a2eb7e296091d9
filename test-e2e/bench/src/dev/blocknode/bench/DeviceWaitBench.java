package dev.blocknode.bench;

import dev.blocknode.os.wait.DeviceWaitMode;
import dev.blocknode.os.natives.NativeLibrary;
import dev.blocknode.os.uevent.NetlinkUeventSource;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.os.wait.DeviceWaiting;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.StringJoiner;

/**
 * Figure f on this host: the plugin's own device waiter (DeviceWaiting, as --device-wait configures it)
 * waits for a block device that appears while it pauses, ending on the kernel's uevent (the default, a 1 s
 * safety poll behind it) or on a 1 s poll (--device-wait=poll --device-poll-interval=1s). The device is a
 * loop device attached by losetup: this host's kernel has no SCSI, and the waiter's code does not care
 * (it wakes on any block/scsi/iscsi/fc event and looks at sysfs again). Prints, per mode, the latencies
 * from the end of losetup to the waiter having the device, in nanoseconds (negative: it had the device
 * before losetup had even exited). Backing files go in the given directory; every loop device is
 * detached here (and the bench's trap detaches any left under the work dir).
 *
 * <p>Arguments: work dir, trials per mode.
 */
public final class DeviceWaitBench {

    private static final Duration ONE_SECOND = Duration.ofSeconds(1);

    public static void main(String[] args) throws Exception {
        NativeLibrary.load();
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING); // the waiter's INFO lines
        Path dir = Files.createDirectories(Path.of(args[0]));
        int trials = Integer.parseInt(args[1]);
        for (DeviceWaitMode mode : DeviceWaitMode.values()) {
            try (DeviceWaiting waiting = DeviceWaiting.start(mode, Optional.of(ONE_SECOND), NetlinkUeventSource::open)) {
                if (mode == DeviceWaitMode.EVENTS && !waiting.eventDriven()) {
                    throw new IOException("the uevent socket could not be opened: figure f needs it");
                }
                StringJoiner latencies = new StringJoiner(",");
                for (int t = 0; t <= trials; t++) { // trial 0: warm-up
                    long latency = attachWhileWaiting(waiting.waiter(), dir, mode.name().toLowerCase() + "-" + t);
                    if (t > 0) {
                        latencies.add(Long.toString(latency));
                    }
                }
                System.out.println("f-" + mode.name().toLowerCase() + "\t" + latencies);
            }
        }
    }

    /** Waits on this thread for a loop device over a new file that another thread attaches once it pauses. */
    private static long attachWhileWaiting(DeviceWaiter waiter, Path dir, String trial) throws Exception {
        Path backing = dir.resolve(trial + ".img");
        try (var file = java.nio.channels.FileChannel.open(backing, java.nio.file.StandardOpenOption.CREATE_NEW,
                java.nio.file.StandardOpenOption.WRITE)) {
            file.truncate(0).write(java.nio.ByteBuffer.allocate(1), (1 << 20) - 1);
        }
        // The device is chosen first, so that the waiter looks at that one device (as the plugin looks at the
        // disks its scan named), not at every loop device of the machine (a thousand after a day of tests).
        String device = Volumes.runCommand(List.of("losetup", "--find")).get(0).strip();
        String name = Path.of(device).getFileName().toString();
        Thread waiting = Thread.currentThread();
        long[] attachedAt = new long[1];
        List<Exception> failed = new ArrayList<>();
        Thread attacher = Thread.ofPlatform().start(() -> {
            try {
                // Only once the waiter has looked and sleeps in its pause: the wake-up is what is measured.
                while (waiting.getState() != Thread.State.TIMED_WAITING) {
                    Thread.onSpinWait();
                }
                Volumes.runCommand(List.of("losetup", device, backing.toString()));
                attachedAt[0] = System.nanoTime();
            } catch (IOException | RuntimeException e) {
                failed.add(e);
            }
        });
        long foundAt;
        try {
            waiter.within(Duration.ofSeconds(30), device + " over " + backing, () -> bound(name, backing));
            foundAt = System.nanoTime();
        } finally {
            attacher.join();
        }
        Volumes.runCommand(List.of("losetup", "--detach", device));
        Files.delete(backing);
        if (!failed.isEmpty()) {
            throw failed.get(0);
        }
        return foundAt - attachedAt[0];
    }

    /** Whether the loop device's sysfs backing_file names the file. */
    private static Optional<Boolean> bound(String loop, Path backing) {
        try {
            return Files.readString(Path.of("/sys/block", loop, "loop/backing_file")).strip().equals(backing.toString())
                    ? Optional.of(true) : Optional.empty();
        } catch (IOException notBound) {
            return Optional.empty();
        }
    }
}
