package dev.blocknode.volume;


import dev.blocknode.outcome.VolumeException;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;

/**
 * At most one operation per volume at a time. A second call on a busy volume is refused at once with
 * ABORTED, as the CSI spec asks, rather than queued: kubelet retries with backoff, and a queue could
 * outlive the caller's deadline and run work nobody waits for. Other volumes proceed in parallel.
 */
public final class OperationGuard {

    private record Running(String operation, Instant since) {
    }

    private final ConcurrentHashMap<String, Running> running = new ConcurrentHashMap<>();

    /** Holds the volume until closed. */
    public final class Permit implements AutoCloseable {
        private final String volumeId;
        private final Running entry;

        private Permit(String volumeId, Running entry) {
            this.volumeId = volumeId;
            this.entry = entry;
        }

        @Override
        public void close() {
            running.remove(volumeId, entry);
        }
    }

    public Permit enter(String volumeId, String operation) throws VolumeException {
        Running mine = new Running(operation, Instant.now());
        Running other = running.putIfAbsent(volumeId, mine);
        if (other != null) {
            long seconds = Duration.between(other.since(), Instant.now()).toSeconds();
            throw new VolumeException(VolumeException.Outcome.ABORTED, "an operation on volume " + volumeId
                    + " is already in progress (" + other.operation() + ", running for " + seconds + " s)");
        }
        return new Permit(volumeId, mine);
    }

    /** Whether a call holds the volume now (a background task leaves such a volume alone rather than take it). */
    public boolean isBusy(String volumeId) {
        return running.containsKey(volumeId);
    }

    public int inFlight() {
        return running.size();
    }
}
