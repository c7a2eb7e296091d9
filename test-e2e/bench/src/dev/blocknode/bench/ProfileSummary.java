package dev.blocknode.bench;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Inclusive CPU-time shares from a JFR recording's jdk.CPUTimeSample events (JDK 25): for every method, the
 * share of samples whose stack contains it. `jfr view cpu-time-hot-methods` shows only self time, which
 * hides that e.g. a record write is spread over open, write, fsync and rename.
 */
final class ProfileSummary {

    /** Library frames worth naming next to blocknode's own. */
    private static final List<String> LIBRARY = List.of(
            "com.google.protobuf.TextFormat$Parser.merge",
            "com.google.protobuf.TextFormat$Printer.printToString",
            "sun.nio.ch.FileChannelImpl.force",
            "java.nio.file.Files.move",
            "java.util.logging.Logger.log",
            "io.micrometer.core.instrument.Timer$Builder.register",
            "sun.nio.fs.UnixPath.toRealPath",
            "java.util.regex.Pattern.compile",
            "io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler.run",
            "io.grpc.internal.ServerImpl$ServerTransportListenerImpl$1HandleServerCall.runInContext",
            "io.grpc.internal.SerializingExecutor.run",
            "java.util.concurrent.ForkJoinPool.deactivate",
            "io.grpc.netty.shaded.io.netty.channel.epoll.Native.eventFdWrite");

    private ProfileSummary() {
    }

    static List<String> summarize(Path recording, int topOwn) throws IOException {
        Map<String, Integer> inclusive = new HashMap<>();
        Map<String, Integer> threads = new HashMap<>();
        int samples = 0;
        long lost = 0;
        for (RecordedEvent event : RecordingFile.readAllEvents(recording)) {
            String type = event.getEventType().getName();
            if (type.equals("jdk.CPUTimeSamplesLost")) {
                lost += event.getLong("lostSamples");
                continue;
            }
            if (!type.equals("jdk.CPUTimeSample") || event.getStackTrace() == null) {
                continue;
            }
            samples++;
            Set<String> seen = new HashSet<>();
            for (RecordedFrame frame : event.getStackTrace().getFrames()) {
                String name = frame.getMethod().getType().getName() + "." + frame.getMethod().getName();
                if (seen.add(name)) {
                    inclusive.merge(name, 1, Integer::sum);
                }
            }
            threads.merge(threadGroup(event), 1, Integer::sum);
        }
        List<String> out = new ArrayList<>();
        if (samples == 0) {
            out.add("no jdk.CPUTimeSample events in " + recording);
            return out;
        }
        int n = samples;
        StringBuilder byThread = new StringBuilder();
        threads.entrySet().stream().sorted((a, b) -> b.getValue() - a.getValue())
                .forEach(e -> byThread.append(e.getKey()).append(' ').append(pct(e.getValue(), n)).append(", "));
        out.add(String.format(Locale.ROOT, "%d CPU-time samples (1 per ms of CPU; %d lost); by thread: %s", samples,
                lost, byThread.substring(0, byThread.length() - 2)));
        StringBuilder own = new StringBuilder("inclusive, blocknode's own methods: ");
        inclusive.entrySet().stream()
                .filter(e -> e.getKey().startsWith("dev.blocknode.") && !e.getKey().startsWith("dev.blocknode.csi.v1.")
                        && !e.getKey().contains("$$Lambda") && !e.getKey().contains(".lambda$"))
                .sorted((a, b) -> b.getValue() - a.getValue()).limit(topOwn)
                .forEach(e -> own.append(shortName(e.getKey())).append(' ').append(pct(e.getValue(), n)).append(", "));
        out.add(own.substring(0, own.length() - 2));
        StringBuilder lib = new StringBuilder("inclusive, library: ");
        for (String name : LIBRARY) {
            lib.append(shortName(name)).append(' ').append(pct(inclusive.getOrDefault(name, 0), n)).append(", ");
        }
        out.add(lib.substring(0, lib.length() - 2));
        return out;
    }

    private static String threadGroup(RecordedEvent event) {
        RecordedThread thread = event.getThread("eventThread");
        if (thread == null) {
            thread = event.getThread("sampledThread");
        }
        if (thread == null) {
            return "?";
        }
        if (thread.isVirtual()) {
            return "virtual threads";
        }
        String name = thread.getJavaName() == null ? "" : thread.getJavaName();
        if (name.startsWith("ForkJoinPool")) {
            return "carrier threads (scheduler)";
        }
        if (name.startsWith("multiThreadIoEventLoopGroup")) {
            return "Netty event loop";
        }
        return "other";
    }

    private static String shortName(String name) {
        String[] parts = name.split("\\.");
        return parts.length >= 2 ? parts[parts.length - 2] + "." + parts[parts.length - 1] : name;
    }

    private static String pct(int count, int total) {
        return String.format(Locale.ROOT, "%.1f%%", 100.0 * count / total);
    }
}
