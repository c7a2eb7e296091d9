package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.volume.record.StagingRecords;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The staged volumes as a background task that works on their paths (the repair loop) may take them: one at a
 * time, under the volume's operation guard, and only while no call holds it, so that a repair never runs beside a
 * stage, unstage or expansion of the same volume. A call that arrives while a repair holds the volume gets ABORTED
 * and is retried by kubelet, as for any busy volume; the repair's own bounds keep that short.
 */
public final class StagedForRepair {

    /**
     * A staged volume, held until closed: what its transport attached and the contexts it was staged with (never
     * secrets), and this node's key when it is staged with fencing at the storage.
     */
    public final class Held implements AutoCloseable {
        private final StagingRecord record;
        private final OperationGuard.Permit permit;

        private Held(StagingRecord record, OperationGuard.Permit permit) {
            this.record = record;
            this.permit = permit;
        }

        public String volumeId() {
            return record.getVolumeId();
        }

        public AttachRequest request() {
            return StagingRecords.attachRequest(record);
        }

        public Attachment attachment() {
            return StagingRecords.attachment(record);
        }

        /** This node's key as the record holds it when the volume was staged with fencing; empty without. */
        public Optional<FenceKey> fenceKey() {
            return record.getFenceKey() == 0 ? Optional.empty() : Optional.of(FenceKey.of(record.getFenceKey()));
        }

        /**
         * Records what the transport's details say now (a path back under another device name), durably, while
         * the volume is still held: path health and release read them.
         */
        public void recordAttachment(Map<String, String> details) throws VolumeException {
            records.save(record.toBuilder().clearAttachment().putAllAttachment(details).build());
        }

        @Override
        public void close() {
            permit.close();
        }
    }

    private static final Logger LOG = Logger.getLogger(StagedForRepair.class.getName());

    private final StagingRecords records;
    private final OperationGuard guard;
    private volatile List<String> kept = List.of();
    /** Whether the state directory's report says {@link #kept}: the first report of a run is always written. */
    private boolean written;

    /** Over a store and a guard of their own: for tests and tools; the plugin's comes from NodeVolumes. */
    public StagedForRepair(RecordStore store, OperationGuard guard) {
        this(new StagingRecords(store), guard);
    }

    StagedForRepair(StagingRecords records, OperationGuard guard) {
        this.records = records;
        this.guard = guard;
    }

    /**
     * A staged volume as its record said when the pass read it, without holding it: what its transport needs to
     * tell whether a repair could do anything ({@code PathRepair.mayRepair}). Never secrets.
     */
    public record Candidate(String volumeId, AttachRequest request, Attachment attachment) {
    }

    /**
     * The volumes whose records say they are staged with a device, the candidates of a repair pass, with what each
     * record says, read without holding the volumes.
     */
    public List<Candidate> candidates() {
        return records.all().stream().filter(this::isStaged)
                .map(r -> new Candidate(r.getVolumeId(), StagingRecords.attachRequest(r), StagingRecords.attachment(r)))
                .toList();
    }

    /**
     * The attach requests of every staging record of {@code transport}, whatever its phase, read now (never secrets):
     * what the repair loop's sweep must leave alone. Refuses while any record cannot be read: it may name anything.
     */
    public List<AttachRequest> recordedFor(String transport) throws VolumeException {
        records.requireNoUnreadable("what the sweep would remove");
        return records.all().stream().filter(r -> r.getTransport().equals(transport))
                .map(StagingRecords::attachRequest).toList();
    }

    /**
     * Takes the volume when no call holds it and its record, read again under the guard, still says it is staged;
     * empty otherwise (busy, unstaged meanwhile, unreadable: the next pass looks again).
     */
    public Optional<Held> hold(String volumeId, String operation) {
        OperationGuard.Permit permit;
        try {
            permit = guard.enter(volumeId, operation);
        } catch (VolumeException busy) {
            return Optional.empty();
        }
        try {
            Optional<StagingRecord> record = records.find(volumeId).filter(this::isStaged);
            if (record.isPresent()) {
                return Optional.of(new Held(record.get(), permit));
            }
        } catch (VolumeException | RuntimeException unreadable) {
            // reported where records are read for calls and health; a repair leaves such a volume alone
        }
        permit.close();
        return Optional.empty();
    }

    /** What the repair loop's last sweep left though nothing names it (see {@code PathRepair.sweepOrphans}). */
    public List<String> kept() {
        return kept;
    }

    /**
     * Called by the repair loop after each sweep; NodeGetStorageHealth and a gauge show it, and {@code blocknode
     * status} from the state directory, written when the list changes (a failed write is logged: a report is no
     * reason to fail the pass).
     */
    public void reportKept(List<String> now) {
        List<String> previous = kept;
        kept = List.copyOf(now);
        if (previous.equals(kept) && written) {
            return;
        }
        try {
            records.saveKeptLeftovers(kept);
            written = true;
        } catch (IOException | RuntimeException e) {
            written = false;
            LOG.warning(() -> "path repair: cannot write what the sweep kept for blocknode status: " + e.getMessage());
        }
    }

    /**
     * Staged in this boot (or by a plugin that recorded no boot): a volume staged in an earlier boot has nothing
     * attached to repair, and its recorded device number may be another volume's now; kubelet's stage attaches it.
     */
    private boolean isStaged(StagingRecord record) {
        return record.getPhase() == StagePhase.STAGED && record.hasDevice()
                && !records.ofEarlierBoot(record);
    }
}
