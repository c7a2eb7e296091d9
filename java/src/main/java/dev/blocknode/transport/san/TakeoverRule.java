package dev.blocknode.transport.san;

import dev.blocknode.transport.FenceKey;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * When a stage may take a LUN from the node that holds it. A live holder re-registers every renewal interval
 * with the next generation of its key, so the keys its tag has registered on the target change at least that
 * often; a holder whose keys have not changed for {@code takeoverAfter} (at least three intervals) cannot reach
 * the LUN (so its writes cannot land either) or its plugin is dead. The first refused stage remembers, in memory,
 * what it saw (the holder's tag and every key of that tag) and when, on a monotonic clock; a retry that finds
 * exactly that still there after {@code takeoverAfter} may preempt, and one that finds anything else starts the
 * observation again: the holder is alive. Observations are forgotten when this node takes the volume, and the
 * oldest go first past {@value #CAPACITY} (a caller cycling through volume ids cannot grow them).
 * <p>
 * Shared by both fencing protocols: a SCSI LUN's (here) and an NVMe namespace's ({@code transport.nvme}), whose
 * Reservation Report shows the same thing, a holder's key and the keys of its tag.
 */
public final class TakeoverRule {

    /** What the target showed of a holder: its tag and all the keys of that tag registered there, in order. */
    public record Sighting(long tag, List<Long> keys) {

        public Sighting {
            keys = List.copyOf(keys);
        }

        public static Sighting of(long holderKey, List<Long> registered) {
            long tag = FenceKey.tagOf(holderKey);
            return new Sighting(tag, registered.stream().filter(k -> FenceKey.tagOf(k) == tag).sorted().toList());
        }
    }

    /** The verdict on one sighting. */
    public sealed interface Verdict {
    }

    /** Refused: first seen now, or seen changed (alive), or not yet long enough. */
    public record Wait(String why) implements Verdict {
    }

    /** The holder's keys stood still for {@code unchanged}: it may be preempted. */
    public record TakeOver(Duration unchanged) implements Verdict {
    }

    private record Observation(Sighting sighting, long sinceNanos) {
    }

    private final Duration takeoverAfter;
    private final LongSupplier nanoTime;
    static final int CAPACITY = 1024;

    private final Map<String, Observation> observations = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Observation> eldest) {
            return size() > CAPACITY;
        }
    };

    public TakeoverRule(Duration takeoverAfter, LongSupplier nanoTime) {
        this.takeoverAfter = takeoverAfter;
        this.nanoTime = nanoTime;
    }

    public Duration takeoverAfter() {
        return takeoverAfter;
    }

    public synchronized Verdict observe(String volumeId, Sighting sighting) {
        long now = nanoTime.getAsLong();
        Observation previous = observations.get(volumeId);
        if (previous == null) {
            observations.put(volumeId, new Observation(sighting, now));
            return new Wait("first seen now; this node may take the volume over if that key and the other keys of"
                    + " its tag stay unchanged for " + seconds(takeoverAfter) + " (a live holder renews them)");
        }
        if (!previous.sighting().equals(sighting)) {
            observations.put(volumeId, new Observation(sighting, now));
            return new Wait("its keys changed since the last attempt, so the holder is alive: the " + seconds(takeoverAfter)
                    + " observation starts again");
        }
        Duration unchanged = Duration.ofNanos(now - previous.sinceNanos());
        if (unchanged.compareTo(takeoverAfter) >= 0) {
            return new TakeOver(unchanged);
        }
        return new Wait("unchanged for " + seconds(unchanged) + " of the " + seconds(takeoverAfter)
                + " after which this node may take the volume over");
    }

    /** Forgets what was seen of a volume: it was staged, taken over or unstaged here. */
    public synchronized void forget(String volumeId) {
        observations.remove(volumeId);
    }

    static String seconds(Duration duration) {
        return duration.toSeconds() + " s";
    }
}
