package dev.blocknode.bench;

import java.util.Arrays;
import java.util.Locale;

/** Durations in nanoseconds; quantiles by nearest rank. */
final class Samples {

    private long[] values = new long[64];
    private int size;

    static Samples of(long... ns) {
        Samples s = new Samples();
        for (long v : ns) {
            s.add(v);
        }
        return s;
    }

    void add(long ns) {
        if (size == values.length) {
            values = Arrays.copyOf(values, size * 2);
        }
        values[size++] = ns;
    }

    void addAll(Samples other) {
        for (int i = 0; i < other.size; i++) {
            add(other.values[i]);
        }
    }

    int size() {
        return size;
    }

    long quantile(double q) {
        if (size == 0) {
            throw new IllegalStateException("no samples");
        }
        long[] sorted = Arrays.copyOf(values, size);
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(q * size);
        return sorted[Math.max(0, Math.min(size - 1, rank - 1))];
    }

    long median() {
        return quantile(0.5);
    }

    long p90() {
        return quantile(0.9);
    }

    long p99() {
        return quantile(0.99);
    }

    long max() {
        return quantile(1.0);
    }

    long min() {
        return quantile(0.0);
    }

    String summary() {
        return String.format(Locale.ROOT, "median %s, p90 %s, p99 %s, min %s, max %s, n=%d", fmt(median()),
                fmt(p90()), fmt(p99()), fmt(min()), fmt(max()), size);
    }

    /** A duration for people: us below 1 ms, ms below 10 s. */
    static String fmt(double ns) {
        if (ns < 1e6) {
            return String.format(Locale.ROOT, "%.1f us", ns / 1e3);
        }
        if (ns < 1e10) {
            return String.format(Locale.ROOT, "%.2f ms", ns / 1e6);
        }
        return String.format(Locale.ROOT, "%.2f s", ns / 1e9);
    }

    static String ratio(double r) {
        return String.format(Locale.ROOT, "%.2fx", r);
    }

    static String mib(long kib) {
        return String.format(Locale.ROOT, "%.1f MiB", kib / 1024.0);
    }
}
