package dev.blocknode.volume;

import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.read.RecentStageFailures;
import dev.blocknode.volume.read.StorageHealthReader;
import dev.blocknode.volume.read.StorageProblem;
import dev.blocknode.volume.read.VolumeHealthReader;
import dev.blocknode.volume.read.VolumeLocator;
import dev.blocknode.volume.read.VolumeStats;
import dev.blocknode.volume.read.VolumeStatsReader;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.Requests;

import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;

/** The volume lifecycle on this node, wired from its parts: what the csi layer calls. */
public final class NodeVolumes {

    private static final Logger LOG = Logger.getLogger(NodeVolumes.class.getName());

    private final VolumeStager stager;
    private final VolumePublisher publisher;
    private final VolumeExpander expander;
    private final VolumeStatsReader stats;
    private final VolumeHealthReader health;
    private final StorageHealthReader storageHealth;
    private final StagedForRepair stagedForRepair;
    private final RecentStageFailures stageFailures = new RecentStageFailures(Clock.systemUTC());
    private final OperationGuard guard;
    private final StalePublications stalePublications;
    private final VolumeFences fences;
    private final StagingRecords records;

    private final VolumeLimit limit;

    /** The lifecycle with no volume limit. */
    public NodeVolumes(Host host, KubeletPaths paths, RecordStore store, Transports transports,
                       FilesystemType defaultFilesystem, VolumeFences.Settings fencing) {
        this(host, paths, store, transports, defaultFilesystem, fencing, VolumeLimit.Settings.NONE);
    }

    public NodeVolumes(Host host, KubeletPaths paths, RecordStore store, Transports transports,
                       FilesystemType defaultFilesystem, VolumeFences.Settings fencing, VolumeLimit.Settings limit) {
        this(host, paths, store, transports, new FilesystemSettings(defaultFilesystem, true), fencing, limit);
    }

    /** {@code filesystem}: the default filesystem, and whether a found ext4 is preened before its mount (--fsck). */
    public NodeVolumes(Host host, KubeletPaths paths, RecordStore store, Transports transports,
                       FilesystemSettings filesystem, VolumeFences.Settings fencing, VolumeLimit.Settings limit) {
        this.records = new StagingRecords(store);
        this.limit = new VolumeLimit(limit, records);
        VolumeLocator locator = new VolumeLocator(host, paths, records);
        this.guard = new OperationGuard();
        this.fences = new VolumeFences(fencing, transports, guard);
        this.publisher = new VolumePublisher(host, paths, records, guard);
        this.stalePublications = new StalePublications(host, paths, records, publisher, guard);
        this.stager = new VolumeStager(new NodeParts(host, paths, records, transports), guard,
                filesystem, stalePublications, fences, this.limit);
        this.expander = new VolumeExpander(host, locator, guard, transports, new FilesystemGrower(host, paths));
        this.stats = new VolumeStatsReader(host, locator, transports);
        this.health = new VolumeHealthReader(paths, records, stats, stageFailures, fences);
        this.storageHealth = new StorageHealthReader(store, transports);
        this.stagedForRepair = new StagedForRepair(records, guard);
    }

    /**
     * Fencing at the storage from now on: the staged volumes whose records say they are fenced are renewed on a
     * thread of its own every renew interval, the first round at once. Called at start, after recovery.
     */
    public void startFencing() throws VolumeException {
        fences.resume(records.all());
        int unreadable = records.unreadable().size();
        if (unreadable > 0) {
            LOG.warning(() -> "fencing: " + unreadable + " staging record(s) cannot be read (named above); a"
                    + " reservation one of their volumes holds is not renewed, and another node may take it over");
        }
        fences.start();
    }

    /** The fencing part, for the tests that drive renewals by hand. */
    VolumeFences fences() {
        return fences;
    }

    /** Stops the renewals (the reservations stay: a restarted plugin renews them). */
    public void stopFencing() {
        fences.close();
    }

    public void stage(Requests.Stage request) throws VolumeException {
        try {
            stager.stage(request);
        } catch (VolumeException failed) {
            stageFailures.failed(request.volumeId(), failed);
            throw failed;
        }
        stageFailures.forget(request.volumeId());
    }

    public void unstage(Requests.Unstage request) throws VolumeException {
        stager.unstage(request);
        stageFailures.forget(request.volumeId());
    }

    public void publish(Requests.Publish request) throws VolumeException {
        publisher.publish(request);
    }

    public void unpublish(Requests.Unpublish request) throws VolumeException {
        publisher.unpublish(request);
    }

    /** Retires the publications of a staged volume whose pods are gone (at start; see {@link StalePublications}). */
    public void retireStalePublications(String volumeId) throws VolumeException {
        stalePublications.retireAtStart(volumeId);
    }

    public long expand(Requests.Expand request) throws VolumeException {
        return expander.expand(request);
    }

    /** Usage and condition; a volume fenced out at the storage says so first (kubelets up to 1.36 read this). */
    public VolumeStats stats(Requests.Stats request) throws VolumeException {
        VolumeStats read = stats.read(request);
        return fences.problem(request.volumeId()).map(read::withProblemFirst).orElse(read);
    }

    /** What is wrong with one volume on this node; empty when nothing is known to be (NodeGetVolumeHealth). */
    public List<HealthProblem> health(Requests.Health request) throws VolumeException {
        return health.read(request);
    }

    /** What is wrong with the storage this node reaches (NodeGetStorageHealth). */
    public List<StorageProblem> storageHealth() throws VolumeException {
        List<StorageProblem> problems = new ArrayList<>(storageHealth.read());
        List<String> kept = stagedForRepair.kept();
        if (!kept.isEmpty()) {
            List<String> named = kept.stream().limit(StorageHealthReader.NAMED_VOLUMES).toList();
            problems.add(new StorageProblem(StorageProblem.Severity.DEGRADED, "LeftoversKept", kept.size()
                    + " thing(s) no staging record names are left on the node, since blocknode cannot prove it may"
                    + " remove them (see the log): " + String.join("; ", named)
                    + (kept.size() > named.size() ? " and " + (kept.size() - named.size()) + " more" : "")));
        }
        return problems;
    }

    /** How many volumes this node takes (NodeGetInfo's max_volumes_per_node; see {@link VolumeLimit}). */
    public VolumeLimit limit() {
        return limit;
    }

    /** The staged volumes, as the repair loop takes them (see {@link StagedForRepair}). */
    public StagedForRepair stagedForRepair() {
        return stagedForRepair;
    }

    public int operationsInFlight() {
        return guard.inFlight();
    }
}
