package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Logger;

/**
 * How many volumes this node can take, as NodeGetInfo reports it and as a stage of a new volume is admitted.
 * The bound is the operator's cap ({@code --max-volumes-per-node}; 0: none, and then nothing is read or
 * refused) less what takes the same room outside Kubernetes: the multipath maps on the node that no blocknode
 * record names (a LUN attached by hand or by another driver, a SAN boot disk). kubelet's scheduler counts
 * blocknode's own volumes against the reported number itself, so they are not taken off it; a stage counts them
 * here, every volume with a record (any phase, unreadable records too), this one's own excepted.
 * <p>
 * Not counted: NVMe namespaces and single-path disks outside blocknode, and the kernel's own ceilings (sd's
 * device numbers, dm's minors, NVMe controller instances), which are each far above any cap a node would be
 * given (docs/volumes.md says so). An attach in flight (an ATTACHING record) may already have its map without
 * a record naming it: each such record excuses one unnamed map, so a stage is never counted twice.
 */
public final class VolumeLimit {

    /** Counts the multipath maps (or whatever takes a volume's room) whose device number is not among these. */
    @FunctionalInterface
    public interface Outside {
        int countNotAmong(Set<DeviceNumber> owned) throws IOException;
    }

    /** The cap and how to count what is outside; {@link #NONE}: no cap. */
    public record Settings(long cap, Outside outside) {

        public static final Settings NONE = new Settings(0, owned -> 0);

        public Settings {
            if (cap < 0) {
                throw new IllegalArgumentException("the volume cap must not be negative, got " + cap);
            }
        }
    }

    /** What the bound is made of at one moment: the cap, blocknode's volumes, the maps outside. */
    public record Reading(long cap, int held, int outside) {

        /** How many blocknode volumes the node takes in all: the cap less the maps outside, never below 0. */
        public long limit() {
            return Math.max(0, cap - outside);
        }

        /**
         * max_volumes_per_node: the limit, but at least 1 under a cap, since 0 tells kubelet "no limit"; a
         * stage is still refused at the true limit.
         */
        public long reported() {
            return cap == 0 ? 0 : Math.max(1, limit());
        }
    }

    private static final Logger LOG = Logger.getLogger(VolumeLimit.class.getName());

    private final Settings settings;
    private final StagingRecords records;
    /** One new volume admitted at a time: the count and the record of its intent are one step. */
    private final ReentrantLock admission = new ReentrantLock();
    /** The last failure to count the maps that was logged ("" once a count succeeds again). */
    private volatile String lastFailure = "";

    VolumeLimit(Settings settings, StagingRecords records) {
        this.settings = settings;
        this.records = records;
    }

    /** The bound now; with no cap, zeros, and nothing read. */
    public Reading read() {
        return read("");
    }

    /** NodeGetInfo's max_volumes_per_node (0: no limit). */
    public long reported() {
        return read().reported();
    }

    /**
     * Admits a stage of {@code volumeId} that records no device yet: held until its intent is recorded (the
     * caller closes it), so that two stages never both take the last place. RESOURCE_EXHAUSTED, before anything is
     * attached or recorded, when the node already holds its limit.
     */
    Admission admit(String volumeId) throws VolumeException {
        if (settings.cap() == 0) {
            return () -> { }; // no limit: stages of different volumes stay as parallel as before
        }
        admission.lock();
        try {
            Reading now = read(volumeId);
            if (now.held() >= now.limit()) {
                throw VolumeException.exhausted("node volume limit reached: volume " + volumeId + " is not staged;"
                        + " this node already holds " + now.held() + " blocknode volume(s) of the " + now.limit()
                        + " it takes (--max-volumes-per-node " + now.cap() + " less " + now.outside()
                        + " multipath map(s) no blocknode volume owns); nothing was attached or recorded", null);
            }
        } catch (VolumeException | RuntimeException e) {
            admission.unlock(); // refused: the next stage counts without waiting
            throw e;
        }
        return admission::unlock;
    }

    /** Held while one stage is admitted; closing it lets the next one count. */
    @FunctionalInterface
    interface Admission extends AutoCloseable {
        @Override
        void close();
    }

    private Reading read(String except) {
        if (settings.cap() == 0) {
            return new Reading(0, 0, 0);
        }
        int held = records.unreadable().size();
        int inFlight = 0;
        Set<DeviceNumber> owned = new HashSet<>();
        for (StagingRecord record : records.all()) {
            // This stage's own earlier attempt is no other volume, but its map is no stranger either.
            held += record.getVolumeId().equals(except) ? 0 : 1;
            // A record of an earlier boot names its map by a number of that boot: its map, if attached again, is
            // not known by number yet, like one an attach in flight is making.
            if (record.getPhase() == StagePhase.ATTACHING || !record.hasDevice()
                    || records.ofEarlierBoot(record)) {
                inFlight++;
            } else {
                owned.add(StagingRecords.deviceNumber(record));
            }
        }
        int outside;
        try {
            outside = Math.max(0, settings.outside().countNotAmong(owned) - inFlight);
            lastFailure = "";
        } catch (IOException | RuntimeException e) {
            // Not a reason to fail NodeGetInfo (kubelet would not register the plugin) nor a stage: the cap alone
            // bounds the node until sysfs can be read again. Logged once per distinct failure, not per call.
            outside = 0;
            String failure = String.valueOf(e.getMessage());
            if (!failure.equals(lastFailure)) {
                lastFailure = failure;
                LOG.warning(() -> "volume limit: cannot count the multipath maps on this node (" + failure
                        + "); the limit is --max-volumes-per-node " + settings.cap() + " alone until they can be");
            }
        }
        return new Reading(settings.cap(), held, outside);
    }
}
