package dev.blocknode.volume;

import dev.blocknode.metrics.FenceEvents;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.read.FencedVolumes;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.AccessMode;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Which volumes this node fences at the storage, and their reservations from stage to unstage: the choice per
 * volume (a SAN transport, a single-node access mode, volume_context {@value FencingMode#KEY}), the reservation
 * taken before the device is formatted or mounted, renewed on a thread of its own every renew interval (a new
 * generation of the key on every path: the proof of life the takeover rule reads), and released at unstage. A
 * renewal that finds this node preempted marks the volume FENCED: reported by NodeGetVolumeHealth, never renewed
 * again (a preempted nexus cannot register itself back). Renewal never takes a volume's operation guard (kubelet's
 * call would get ABORTED); it skips a volume a call holds, and a per-volume lock keeps it apart from the stage's
 * acquire and the unstage's release of that volume.
 */
public final class VolumeFences implements AutoCloseable, FencedVolumes {

    private static final Logger LOG = Logger.getLogger(VolumeFences.class.getName());

    /** This node's key and how often fenced volumes are renewed. */
    public record Settings(FenceKey node, Duration renewInterval) {

        public static Settings of(String nodeId, Duration renewInterval) {
            return new Settings(FenceKey.forNode(nodeId), renewInterval);
        }
    }

    /** What a fenced volume's last renewal found; the label is its {@code blocknode_fenced_volumes} state. */
    enum State {
        HELD("held"), UNREACHABLE("unreachable"), FENCED("fenced_out");

        final String label;

        State(String label) {
            this.label = label;
        }
    }

    /** One fenced volume: what its renewal works from, and what it last found. Guarded by {@code lock}. */
    private static final class Fenced {
        final ReentrantLock lock = new ReentrantLock();
        final Fencing fencing;
        final Attachment attachment;
        FenceKey key;
        /** Volatile besides: the metrics gauge reads it without the lock, which a renewal may hold for long. */
        volatile State state = State.HELD;
        String why = "";

        Fenced(Fencing fencing, Attachment attachment, FenceKey key) {
            this.fencing = fencing;
            this.attachment = attachment;
            this.key = key;
        }
    }

    private final Settings settings;
    private final Transports transports;
    private final OperationGuard guard;
    private final Map<String, Fenced> volumes = new ConcurrentHashMap<>();
    private ScheduledExecutorService renewals;

    VolumeFences(Settings settings, Transports transports, OperationGuard guard) {
        this.settings = settings;
        this.transports = transports;
        this.guard = guard;
    }

    public FenceKey nodeKey() {
        return settings.node();
    }

    /**
     * What can be told from the request alone, before anything is attached: the {@value FencingMode#KEY} key is
     * well-formed, and {@code required} is asked only where it can be met (a single-node access mode, a transport
     * that fences).
     */
    static void check(String volumeId, Transport transport, AccessMode accessMode, AttachRequest request)
            throws VolumeException {
        if (FencingMode.of(request) != FencingMode.REQUIRED) {
            return;
        }
        if (accessMode.multiNode()) {
            throw VolumeException.invalid("volume_context." + FencingMode.KEY + "=required cannot be met by access"
                    + " mode " + accessMode + ": fencing reserves a volume for one node");
        }
        if (transport.fencing().isEmpty()) {
            throw VolumeException.precondition("volume " + volumeId + " cannot be fenced: transport "
                    + transport.name() + " has no fencing at the storage (volume_context." + FencingMode.KEY
                    + "=required)");
        }
    }

    /**
     * The stage's fencing step, once the device is attached and before it is formatted or mounted: records this
     * node's key (durably, before the first registration, so unstage releases it whatever happens next), takes the
     * reservation, and records the key it was taken with; or records that the volume is not fenced.
     *
     * @throws VolumeException FAILED_PRECONDITION when another node holds the LUN, or when {@code required} cannot
     *                         be met (the caller undoes the attach; nothing of this node stays registered)
     */
    void acquire(String volumeId, Transport transport, AccessMode accessMode, AttachRequest request,
                 Attachment attachment, StagingRecord.Builder record, StagingRecords records) throws VolumeException {
        FencingMode mode = FencingMode.of(request);
        Optional<Fencing> fencing = transport.fencing();
        if (mode == FencingMode.OFF || accessMode.multiNode() || fencing.isEmpty()) {
            record.setFenceKey(0);
            return;
        }
        records.save(record.setFenceKey(settings.node().value()).build());
        Fencing.Acquired acquired;
        try {
            acquired = withLock(volumeId, () -> fencing.get().acquire(volumeId, attachment, settings.node()));
        } catch (VolumeException refused) {
            if (refused.outcome() == VolumeException.Outcome.FAILED_PRECONDITION) {
                // Held by another node: this node registered nothing (or took it back), so there is nothing to release.
                records.save(record.setFenceKey(0).build());
            }
            throw refused;
        }
        if (acquired instanceof Fencing.Held held) {
            record.setFenceKey(held.key().value());
            volumes.put(volumeId, new Fenced(fencing.get(), attachment, held.key()));
            LOG.info(() -> "volume " + volumeId + ": reserved at the storage with key " + held.key() + " on "
                    + held.paths() + " path(s)" + held.tookOverFrom().map(k -> ", taken over from " + k).orElse(""));
            return;
        }
        String why = ((Fencing.Unsupported) acquired).why();
        records.save(record.setFenceKey(0).build());
        if (mode == FencingMode.REQUIRED) {
            throw VolumeException.precondition("volume " + volumeId + " cannot be fenced: " + why + " (volume_context."
                    + FencingMode.KEY + "=required)");
        }
        LOG.warning(() -> "volume " + volumeId + " is staged without fencing: " + why + " (volume_context."
                + FencingMode.KEY + "=auto)");
        FenceEvents.unfenced();
    }

    /**
     * Takes the volume's reservation and this node's registrations off its LUN (unstage, after the flush and before
     * the paths go; a refused stage's undo), waiting for a renewal of it in flight. A volume found FENCED loses only
     * what is still this node's: the new holder's registrations are never touched.
     */
    void release(StagingRecord record) {
        String volumeId = record.getVolumeId();
        withLock(volumeId, () -> {
            Fenced gone = volumes.remove(volumeId);
            if (record.getFenceKey() == 0 || !record.hasDevice()) {
                return null;
            }
            Optional<Fencing> fencing = transports.named(record.getTransport()).flatMap(Transport::fencing);
            if (fencing.isPresent()) {
                fencing.get().release(volumeId, StagingRecords.attachment(record), FenceKey.of(record.getFenceKey()));
                LOG.info(() -> "volume " + volumeId + ": released its reservation at the storage"
                        + (gone != null && gone.state == State.FENCED ? " (it was fenced out: only this node's"
                        + " registrations were touched)" : ""));
            }
            return null;
        });
    }

    /** At start: the staged volumes whose records say they are fenced are renewed from now on. */
    void resume(List<StagingRecord> records) {
        for (StagingRecord record : records) {
            if (record.getFenceKey() == 0 || record.getPhase() != StagePhase.STAGED || !record.hasDevice()) {
                continue;
            }
            transports.named(record.getTransport()).flatMap(Transport::fencing).ifPresent(fencing -> volumes.put(
                    record.getVolumeId(), new Fenced(fencing, StagingRecords.attachment(record),
                            FenceKey.of(record.getFenceKey()))));
        }
        if (!volumes.isEmpty()) {
            LOG.info(() -> "fencing: renewing the reservations of " + volumes.size() + " staged volume(s)");
        }
    }

    /** Starts the renewals: a first round at once (a restarted plugin learns soon whether it was fenced out). */
    public synchronized void start() {
        if (renewals != null) {
            return;
        }
        renewals = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "blocknode-fencing-renewal");
            thread.setDaemon(true);
            return thread;
        });
        long millis = settings.renewInterval().toMillis();
        renewals.scheduleWithFixedDelay(this::renewAll, 0, millis, TimeUnit.MILLISECONDS);
    }

    /** One renewal round over every fenced volume; what the scheduled thread runs. */
    void renewAll() {
        for (Map.Entry<String, Fenced> entry : volumes.entrySet()) {
            try {
                renew(entry.getKey(), entry.getValue());
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "fencing: renewing volume " + entry.getKey() + " failed", e);
            }
        }
    }

    private void renew(String volumeId, Fenced volume) {
        if (guard.isBusy(volumeId) || !volume.lock.tryLock()) {
            return; // a call holds it: renewed next round
        }
        try {
            if (volume.state == State.FENCED || volumes.get(volumeId) != volume) {
                return;
            }
            Fencing.Renewal renewal = volume.fencing.renew(volumeId, volume.attachment, volume.key);
            if (renewal instanceof Fencing.Renewed renewed) {
                if (volume.state == State.UNREACHABLE) {
                    LOG.info(() -> "volume " + volumeId + ": its LUN answers the reservation renewal again");
                }
                volume.key = renewed.key();
                volume.state = State.HELD;
            } else if (renewal instanceof Fencing.Unreachable unreachable) {
                if (volume.state != State.UNREACHABLE) {
                    LOG.warning(() -> "volume " + volumeId + ": cannot renew its reservation at the storage (tried"
                            + " again every " + settings.renewInterval().toSeconds() + " s): " + unreachable.why());
                }
                volume.state = State.UNREACHABLE;
            } else {
                Fencing.FencedOut out = (Fencing.FencedOut) renewal;
                volume.state = State.FENCED;
                volume.why = out.why();
                LOG.severe(() -> "volume " + volumeId + " is FENCED: " + out.why() + "; this node's writes to it fail"
                        + " at the storage from now on; unstage it here");
                FenceEvents.fencedOut();
            }
        } finally {
            volume.lock.unlock();
        }
    }

    /** Whether the volume was found fenced out: NodeGetVolumeHealth's {@code Fenced}. */
    @Override
    public Optional<HealthProblem> problem(String volumeId) {
        Fenced volume = volumes.get(volumeId);
        if (volume == null || volume.state != State.FENCED) {
            return Optional.empty();
        }
        return Optional.of(new HealthProblem(HealthProblem.Kind.FENCED, "volume " + volumeId + " was fenced out at the"
                + " storage by another node: " + volume.why + "; writes from this node fail there"));
    }

    /** How many volumes under fencing are in {@code state} now; never waits for a renewal. */
    long count(State state) {
        return volumes.values().stream().filter(v -> v.state == state).count();
    }

    /** The fenced volumes' current keys (for tests and the log). */
    Optional<FenceKey> currentKey(String volumeId) {
        return Optional.ofNullable(volumes.get(volumeId)).map(v -> v.key);
    }

    @FunctionalInterface
    private interface Locked<T, E extends Exception> {
        T run() throws E;
    }

    /** Runs {@code action} holding the volume's renewal lock, if the volume is being renewed. */
    private <T, E extends Exception> T withLock(String volumeId, Locked<T, E> action) throws E {
        Fenced volume = volumes.get(volumeId);
        if (volume == null) {
            return action.run();
        }
        volume.lock.lock();
        try {
            return action.run();
        } finally {
            volume.lock.unlock();
        }
    }

    @Override
    public synchronized void close() {
        if (renewals != null) {
            renewals.shutdownNow();
            renewals = null;
        }
    }
}
