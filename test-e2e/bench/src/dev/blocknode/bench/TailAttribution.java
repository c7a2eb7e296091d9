package dev.blocknode.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the slow publish cycles of one volume went: each cycle the client timed is matched with the plugin's
 * own account of its two calls (the per-call log line's "in N us", from the first interceptor to the answer)
 * and with the plugin's GC pauses (its -Xlog:gc file, stamped with System.nanoTime's clock, which the client
 * shares). What is neither handler nor pause is outside the plugin's handlers: the socket, the event loop's
 * hand-over to a call thread and back, the client, and waiting for a CPU.
 */
final class TailAttribution {

    /** "... in 183 us" of a publish or unpublish line of one volume. */
    private static final Pattern HANDLED = Pattern.compile("\"msg\":\"Node(P|Unp)ublishVolume #\\d+ OK in (\\d+) us");
    /** "[1205576631753ns] GC(0) Pause Young (Allocation Failure) 3M->1M(7M) 1.185ms" */
    private static final Pattern PAUSE = Pattern.compile("^\\[(\\d+)ns\\] GC\\(\\d+\\) Pause .* ([\\d.]+)ms$");

    private record Cycle(long start, long nanos, int publishIndex) {
    }

    private final String volumeId;
    private final List<Cycle> cycles = new ArrayList<>();
    /** Every publish of the volume so far, measured or not: the n-th is the plugin's n-th publish line. */
    private int publishes;

    TailAttribution(String volumeId) {
        this.volumeId = volumeId;
    }

    /** Counts a publish of the volume that is not measured (warm-up, the stats rounds' publications). */
    void published() {
        publishes++;
    }

    /** A measured cycle: its publish is the next one of the volume. */
    void cycle(long startNanos, long nanos) {
        cycles.add(new Cycle(startNanos, nanos, publishes++));
    }

    /** The slowest 1% against the middle 10%, as one line; or why it cannot say. */
    String describe(Path pluginLog, Path gcLog) throws IOException {
        List<long[]> handled = handledPairs(pluginLog);
        if (handled.size() < publishes) {
            return "no attribution: the plugin logged " + handled.size() + " publish+unpublish pairs of " + volumeId
                    + ", the client made " + publishes;
        }
        List<long[]> pauses = pauses(gcLog);
        List<Cycle> sorted = new ArrayList<>(cycles);
        sorted.sort(Comparator.comparingLong(Cycle::nanos));
        int n = sorted.size();
        int slow = Math.max(1, n / 100);
        String tail = band(sorted.subList(n - slow, n), handled, pauses);
        String middle = band(sorted.subList(n * 45 / 100, Math.max(n * 45 / 100 + 1, n * 55 / 100)), handled, pauses);
        Samples pauseLengths = new Samples();
        long first = sorted.stream().mapToLong(Cycle::start).min().orElse(0);
        long last = sorted.stream().mapToLong(c -> c.start() + c.nanos()).max().orElse(0);
        pauses.stream().filter(p -> p[1] >= first && p[0] <= last).forEach(p -> pauseLengths.add(p[1] - p[0]));
        return String.format(Locale.ROOT, "the slowest 1%% (%d of %d cycles): %s; the middle 10%%: %s. GC pauses of"
                        + " the plugin while the measured cycles ran: %d (%s)", slow, n, tail, middle, pauseLengths.size(),
                pauseLengths.size() == 0 ? "none" : "median " + Samples.fmt(pauseLengths.median()) + ", max "
                        + Samples.fmt(pauseLengths.max()));
    }

    private static String band(List<Cycle> band, List<long[]> handled, List<long[]> pauses) {
        long client = 0;
        long inHandlers = 0;
        long inPauses = 0;
        int paused = 0;
        for (Cycle c : band) {
            long[] h = handled.get(c.publishIndex());
            client += c.nanos();
            inHandlers += h[0] + h[1];
            long overlap = 0;
            for (long[] p : pauses) {
                overlap += Math.max(0, Math.min(p[1], c.start() + c.nanos()) - Math.max(p[0], c.start()));
            }
            if (overlap > 0) {
                paused++;
                inPauses += overlap;
            }
        }
        int k = band.size();
        return String.format(Locale.ROOT, "cycle %s on average, of which the plugin's two handlers %s and outside them"
                        + " %s; %d of %d with a GC pause inside (%s of pause per cycle on average)",
                Samples.fmt((double) client / k), Samples.fmt((double) inHandlers / k),
                Samples.fmt((double) (client - inHandlers) / k), paused, k, Samples.fmt((double) inPauses / k));
    }

    /** Nanoseconds {publish, unpublish} the plugin logged for each publish of the volume, in order. */
    private List<long[]> handledPairs(Path log) throws IOException {
        List<long[]> pairs = new ArrayList<>();
        String volume = "\"volume_id\":\"" + volumeId + "\"";
        for (String line : Files.readAllLines(log)) {
            if (!line.contains(volume)) {
                continue;
            }
            Matcher m = HANDLED.matcher(line);
            if (m.find()) {
                long nanos = Long.parseLong(m.group(2)) * 1000;
                if (m.group(1).equals("P")) {
                    pairs.add(new long[] {nanos, 0});
                } else if (!pairs.isEmpty()) {
                    pairs.get(pairs.size() - 1)[1] = nanos;
                }
            }
        }
        return pairs;
    }

    /** {start, end} of each GC pause, in System.nanoTime's clock. */
    private static List<long[]> pauses(Path gcLog) throws IOException {
        List<long[]> pauses = new ArrayList<>();
        if (!Files.exists(gcLog)) {
            return pauses;
        }
        for (String line : Files.readAllLines(gcLog)) {
            Matcher m = PAUSE.matcher(line);
            if (m.find()) {
                long end = Long.parseLong(m.group(1));
                pauses.add(new long[] {end - (long) (Double.parseDouble(m.group(2)) * 1e6), end});
            }
        }
        return pauses;
    }
}
