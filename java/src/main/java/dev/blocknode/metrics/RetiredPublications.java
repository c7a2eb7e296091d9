package dev.blocknode.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Metrics;

/**
 * Publications the plugin took down itself, without NodeUnpublishVolume, because the pod they belonged to
 * no longer exists on the node (kubelet had forgotten them). Each one also has a WARNING line naming the
 * volume, the target and the pod; a rising count says kubelet is losing track of publications on this node.
 */
public final class RetiredPublications {

    public static final String NAME = "blocknode_stale_publications_retired";

    private RetiredPublications() {
    }

    public static void count() {
        counter().increment();
    }

    /**
     * The counter, registered at start too, so that the series is scraped at 0 before the first retirement and a
     * rate over it sees that one.
     */
    public static Counter counter() {
        return Counter.builder(NAME)
                .description("publications retired without NodeUnpublishVolume because their pod no longer exists on"
                        + " this node (at NodeUnstageVolume or at start)")
                .register(Metrics.globalRegistry);
    }
}
