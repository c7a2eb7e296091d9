package dev.blocknode.bench;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.blocknode.bench.BenchRun.log;

/** (f) device waits woken by the kernel's uevent against a 1 s poll. */
final class FigureF extends Figure {

    private static final int DEVICE_WAIT_TRIALS = 10;

    FigureF(BenchRun run) {
        super(run);
    }

    /**
     * The plugin's device waiter (in a JVM with the image's flags) waiting for a device that appears while it
     * pauses: on the kernel's uevent vs a 1 s poll. A loop device stands in for a SCSI disk (this kernel has
     * no SCSI; the VM tier measures iSCSI, see test-e2e/vm/README.md), the waiter's code is the same.
     */
    void measure() throws Exception {
        log("(f) device waits: kernel uevent vs a 1 s poll (loop devices, " + DEVICE_WAIT_TRIALS + " of each)");
        List<String> command = o.imageJvm(List.of(), "dev.blocknode.bench.DeviceWaitBench",
                o.work().resolve("f").toString(), Integer.toString(DEVICE_WAIT_TRIALS));
        Map<String, Samples> byMode = new LinkedHashMap<>();
        for (String line : Volumes.runCommand(command)) {
            String[] parts = line.split("\t");
            if (parts.length == 2 && parts[0].startsWith("f-")) {
                Samples samples = new Samples();
                for (String value : parts[1].split(",")) {
                    samples.add(Long.parseLong(value));
                }
                byMode.put(parts[0].substring(2), samples);
            }
        }
        Samples events = byMode.get("events");
        Samples poll = byMode.get("poll");
        if (events == null || poll == null) {
            throw new IOException("DeviceWaitBench printed no figures: " + byMode.keySet());
        }
        long eventsMedian = Math.max(0, events.median());
        long eventsMax = Math.max(0, events.max());
        report.row("f", "device there -> the waiter has it, on the uevent (1 s safety poll behind), median of "
                + events.size(), Samples.fmt(eventsMedian), "1 s poll " + Samples.fmt(poll.median()),
                (double) eventsMedian / poll.median(), "<= 50 ms", eventsMedian <= 50_000_000L, eventsMedian / 5e7);
        report.row("f", "the same, slowest of " + events.size(), Samples.fmt(eventsMax), "1 s poll "
                + Samples.fmt(poll.max()), (double) eventsMax / poll.max(), "<= 50 ms", eventsMax <= 50_000_000L,
                eventsMax / 5e7);
        report.detail("f", "on the uevent (--device-wait=events): " + events.summary() + " (negative: the waiter"
                + " had the device before losetup had exited; shown as 0 in the table)");
        report.detail("f", "1 s poll (--device-wait=poll --device-poll-interval=1s): " + poll.summary() + " (near"
                + " its worst by construction: the device appears right after a look; arriving at random, half"
                + " the interval on average)");
        report.detail("f", "a loop device attached by losetup while the plugin's DeviceWaiter pauses, from losetup's"
                + " exit; iSCSI in the VM tier: test-e2e/vm/README.md, \"Event-driven waits vs polling\"");
    }
}
