package dev.blocknode.volume.read;

import dev.blocknode.outcome.VolumeException;

import java.time.Clock;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The last failed NodeStageVolume of each volume that is not staged, kept in memory so NodeGetVolumeHealth can
 * say why a volume a pod waits for is not there (the spec lets a CO ask about a volume it recently tried to
 * stage). Only failures that say something about the volume or the storage are kept: a malformed request, a
 * concurrent call (ABORTED) or a conflicting one (ALREADY_EXISTS) are about the caller. Forgotten when the
 * volume stages or unstages, and bounded: the oldest entries go first, so a caller cycling through volume ids
 * cannot grow it.
 */
public final class RecentStageFailures {

    /** Far more volumes than one node stages; each entry is a volume id and one message. */
    static final int CAPACITY = 1024;

    record Failure(Instant at, VolumeException.Outcome outcome, String message) {
    }

    private final Clock clock;
    private final Map<String, Failure> failures = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Failure> eldest) {
            return size() > CAPACITY;
        }
    };

    public RecentStageFailures(Clock clock) {
        this.clock = clock;
    }

    public synchronized void failed(String volumeId, VolumeException failure) {
        if (!concernsTheVolume(failure.outcome())) {
            return;
        }
        // Re-inserted, so that the most recent failure is also the last to be evicted.
        failures.remove(volumeId);
        failures.put(volumeId, new Failure(clock.instant(), failure.outcome(), failure.getMessage()));
    }

    public synchronized void forget(String volumeId) {
        failures.remove(volumeId);
    }

    synchronized Optional<Failure> of(String volumeId) {
        return Optional.ofNullable(failures.get(volumeId));
    }

    private static boolean concernsTheVolume(VolumeException.Outcome outcome) {
        return switch (outcome) {
            case INVALID_ARGUMENT, ABORTED, ALREADY_EXISTS -> false;
            default -> true;
        };
    }
}
