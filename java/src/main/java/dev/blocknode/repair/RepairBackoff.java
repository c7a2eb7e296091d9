package dev.blocknode.repair;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/**
 * Per volume (one LUN of one target set), how many passes the repair loop leaves it alone after its repairs failed:
 * 1, 2, 4, ... up to {@value #MAX_SKIPPED_PASSES} passes, back to none on a pass that fails nothing. A port that
 * returns without the LUN (unmapped there, zoned away) is then tried about every quarter of an hour at the default
 * interval, instead of costing a scan and a wait every pass.
 */
final class RepairBackoff {

    static final int MAX_SKIPPED_PASSES = 32;

    private record State(int failures, long nextPass) {
    }

    private final Map<String, State> states = new HashMap<>();

    /** Whether the volume may be repaired in pass number {@code pass}. */
    boolean due(String volumeId, long pass) {
        State state = states.get(volumeId);
        return state == null || pass >= state.nextPass();
    }

    /** A repair in pass {@code pass} failed: returns how many passes the volume is left alone now. */
    long failed(String volumeId, long pass) {
        int failures = states.getOrDefault(volumeId, new State(0, 0)).failures() + 1;
        long skipped = Math.min(MAX_SKIPPED_PASSES, 1L << Math.min(failures - 1, 30));
        states.put(volumeId, new State(failures, pass + skipped + 1));
        return skipped;
    }

    void succeeded(String volumeId) {
        states.remove(volumeId);
    }

    /** Forgets the volumes that are no longer staged. */
    void retainOnly(Collection<String> staged) {
        states.keySet().retainAll(staged);
    }
}
