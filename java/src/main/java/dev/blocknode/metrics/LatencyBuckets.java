package dev.blocknode.metrics;

import io.micrometer.core.instrument.Timer;

import java.time.Duration;

/**
 * The bucket boundaries of the plugin's two latency histograms, {@code blocknode_rpc_seconds} and
 * {@code blocknode_phase_seconds}: 16, each a series of its own on every (method, code) and (phase, outcome)
 * pair of every node, so chosen for what the two measure rather than Micrometer's percentile histogram (69
 * buckets, 72 series a pair with {@code _count}, {@code _sum} and {@code _max}; 20 with these).
 *
 * <p>Why these: the fastest calls (Probe, GetPluginInfo, NodeGetVolumeStats) take well under a millisecond, and
 * telling 0.2 ms from 0.5 ms apart is the benchmarks' job, not a dashboard's: 1 ms is the lowest boundary. A
 * local stage, an e2fsck of a clean filesystem or a mount take milliseconds to a few hundred; an iSCSI login,
 * a SCSI scan or a device wait a few seconds; mkfs, e2fsck of an unclean filesystem or a resize of a large
 * volume tens of seconds. Up to 10 s the steps are 1, 2.5, 5 a decade, so a quantile read from them is off by
 * less than a step; above, 30 and 60 s. kubelet gives up on a call after 2 minutes, so 120 s is the last:
 * a call or phase past it lands in +Inf only, and histogram_quantile answers 120 s, "as long as kubelet waits".
 */
public final class LatencyBuckets {

    private static final double[] SECONDS = {
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

    private LatencyBuckets() {
    }

    /** The builder with these buckets (Micrometer's service level objectives) and no percentile histogram. */
    public static Timer.Builder on(Timer.Builder timer) {
        Duration[] boundaries = new Duration[SECONDS.length];
        for (int i = 0; i < SECONDS.length; i++) {
            boundaries[i] = Duration.ofNanos(Math.round(SECONDS[i] * 1e9));
        }
        return timer.publishPercentileHistogram(false).serviceLevelObjectives(boundaries);
    }
}
