package dev.blocknode.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Metrics;

import java.util.Map;

/**
 * What fencing at the storage did, counted: each also has a log line naming the volume and the keys. Registered at
 * start (see {@link #registerAll}) so that each series is scraped at 0 before its first event.
 */
public final class FenceEvents {

    public static final String UNFENCED = "blocknode_fencing_unfenced_stages";
    public static final String TAKEOVERS = "blocknode_fencing_takeovers";
    public static final String FOREIGN_REMOVED = "blocknode_fencing_foreign_registrations_removed";
    public static final String FENCED_OUT = "blocknode_fencing_fenced_out";
    public static final String RESERVED_AGAIN = "blocknode_fencing_reserved_again";

    private static final Map<String, String> DESCRIPTIONS = Map.of(
            UNFENCED, "volumes staged without fencing because their LUN or namespace does not support what fencing"
                    + " needs, or (NVMe/TCP) the node has no host ID (fencing=auto)",
            TAKEOVERS, "LUNs and namespaces taken over from a node whose reservation key stopped changing (the"
                    + " takeover rule)",
            FOREIGN_REMOVED, "other nodes' registrations removed from a LUN or namespace this node reserved",
            FENCED_OUT, "volumes this node found preempted by another node (their writes fail at the target)",
            RESERVED_AGAIN, "volumes this node registered and reserved again after their target restarted and forgot"
                    + " its reservations");

    private FenceEvents() {
    }

    /** A volume with fencing "auto" staged unfenced: its LUN or namespace, or its node, lacks what fencing needs. */
    public static void unfenced() {
        counter(UNFENCED).increment();
    }

    /** A stage preempted another node whose key had not changed for the takeover time. */
    public static void takeover() {
        counter(TAKEOVERS).increment();
    }

    /** A stage removed another node's registration that did not hold the reservation (a racer, a dead stager). */
    public static void foreignRemoved() {
        counter(FOREIGN_REMOVED).increment();
    }

    /** A renewal found this node preempted: the volume is fenced out at the target. */
    public static void fencedOut() {
        counter(FENCED_OUT).increment();
    }

    /** A renewal found the target restarted without its reservations and reserved the volume again. */
    public static void reservedAgain() {
        counter(RESERVED_AGAIN).increment();
    }

    public static void registerAll() {
        DESCRIPTIONS.keySet().forEach(FenceEvents::counter);
    }

    private static Counter counter(String name) {
        return Counter.builder(name).description(DESCRIPTIONS.get(name)).register(Metrics.globalRegistry);
    }
}
