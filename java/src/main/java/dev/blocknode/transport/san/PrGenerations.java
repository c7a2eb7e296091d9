package dev.blocknode.transport.san;

import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The lowest PRgeneration each fenced volume's LUN can have now, as far as this node knows: the highest it read
 * there since the stage (or since the plugin started). SPC-4 has the target raise the generation with every
 * registration change and set it to zero only at power-on, so a generation below this floor proves the target
 * restarted and forgot its reservations (it persists them only with APTPL), where the same empty reservation with
 * the generation at or above the floor may be another node's takeover and release. In memory only: after a
 * restart the first renewal that succeeds reads it again. An NVMe namespace's generation follows the same rule (the
 * NVMe Base Specification raises it with every registration change and preemption; nvmet keeps it in memory), so
 * {@code transport.nvme} uses this too.
 */
public final class PrGenerations {

    private final Map<String, Long> floors = new ConcurrentHashMap<>();

    /** The LUN of {@code volumeId} answered with {@code generation}. */
    public void seen(String volumeId, long generation) {
        floors.merge(volumeId, generation, Math::max);
    }

    public OptionalLong floor(String volumeId) {
        Long floor = floors.get(volumeId);
        return floor == null ? OptionalLong.empty() : OptionalLong.of(floor);
    }

    /** The volume is no longer fenced by this node (released, or taken back after a restart was seen). */
    public void forget(String volumeId) {
        floors.remove(volumeId);
    }
}
