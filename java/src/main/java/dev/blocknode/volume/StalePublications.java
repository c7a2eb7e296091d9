package dev.blocknode.volume;

import dev.blocknode.metrics.RetiredPublications;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.kubelet.KubeletPaths;
import dev.blocknode.volume.kubelet.KubeletPods;
import dev.blocknode.volume.record.Publications;
import dev.blocknode.volume.record.StagingRecords;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Publications whose pod no longer exists on this node, retired by the plugin itself. Kubelet can forget a
 * publication it never unpublished (a raw block pod deleted while the driver was unregistered, then a second
 * kubelet restart: kubernetes/kubernetes#85476); from then on it asks NodeUnstageVolume for ever, and a live
 * publication makes every one of those FAILED_PRECONDITION, while the device stays bound for a dead pod.
 *
 * <p>A publication in kubelet's layout whose pod directory is gone ({@link KubeletPods}) belongs to nobody any
 * more, and a pod UID is never reused, so the fact cannot go stale between the look and the unmount. Such a
 * publication is taken down exactly as NodeUnpublishVolume would take it down (by descriptor, unmounting only a
 * mount of this volume's device or read-only view), logged at WARNING and counted. Nothing else is retired: a
 * target outside kubelet's layout, one whose pod is still there, one holding a mount that is not the volume's.
 *
 * <p>A filesystem publication lies inside its pod's directory, which cannot be removed while it is mounted
 * there, so in practice only raw block publications (under plugins/.../volumeDevices/publish) are ever found
 * stale; both layouts are handled alike.
 */
final class StalePublications {

    private static final Logger LOG = Logger.getLogger(StalePublications.class.getName());

    private final Host host;
    private final StagingRecords records;
    private final KubeletPaths paths;
    private final KubeletPods pods;
    private final VolumePublisher publisher;
    private final OperationGuard guard;

    StalePublications(Host host, KubeletPaths paths, StagingRecords records, VolumePublisher publisher,
                      OperationGuard guard) {
        this.host = host;
        this.records = records;
        this.paths = paths;
        this.pods = new KubeletPods(paths);
        this.publisher = publisher;
        this.guard = guard;
    }

    /**
     * Retires those of {@code live} (targets of {@code record} that hold a mount) whose pod is gone, and returns
     * the targets that still hold a mount afterwards. The caller holds the volume's permit.
     */
    List<String> retire(StagingRecord record, List<String> live) throws VolumeException {
        boolean tried = false;
        for (String recorded : live) {
            Optional<Path> target = underTheRoot(recorded);
            Optional<String> pod = target.flatMap(t -> pods.podOf(t, record.hasBlock()));
            if (pod.isPresent() && pods.isGone(pod.get())) {
                retire(record.getVolumeId(), target.get(), pod.get());
                tried = true;
            }
        }
        if (!tried) {
            return live;
        }
        return Publications.live(host, records.find(record.getVolumeId()).orElse(record));
    }

    /**
     * Takes down the publications of {@code record} that hold no mount but still have a read-only view: a
     * read-only block publish that died between attaching its loop device and binding it, which kubelet then
     * forgot (it unstages without unpublishing). The view would hold the volume's device open for ever, and
     * the detach after it would fail or leave the loop device over a device that is gone. Called by unstage
     * once no publication is live, holding the volume's permit; taken down as NodeUnpublishVolume would.
     */
    void releaseUnboundViews(String volumeId) throws VolumeException {
        Optional<StagingRecord> record = records.find(volumeId);
        if (record.isEmpty()) {
            return;
        }
        for (var publication : record.get().getPublicationsMap().entrySet()) {
            Optional<Path> target = underTheRoot(publication.getKey());
            if (publication.getValue().hasReadonlyView() && target.isPresent()) {
                publisher.takeDown(volumeId, target.get());
                LOG.warning(() -> "released the read-only view " + publication.getValue().getReadonlyView().getPath()
                        + " of volume " + volumeId + " left by a publication at " + target.get()
                        + " that was never completed nor unpublished");
            }
        }
    }

    /**
     * At start, before the socket opens: retires the stale publications of a staged volume, holding the volume
     * as any call does. The volume stays staged: kubelet may still want it, and asks for its unstage itself.
     */
    void retireAtStart(String volumeId) throws VolumeException {
        try (OperationGuard.Permit ignored = guard.enter(volumeId, "start-up: retire stale publications")) {
            Optional<StagingRecord> record = records.find(volumeId);
            if (record.isPresent() && record.get().getPhase() == StagePhase.STAGED) {
                retire(record.get(), Publications.live(host, record.get()));
            }
        }
    }

    /** A recorded target, confined as a request's is; empty for one recorded under another --kubelet-root. */
    private Optional<Path> underTheRoot(String recorded) {
        try {
            return Optional.of(paths.confine("target_path", recorded));
        } catch (VolumeException outside) {
            return Optional.empty();
        }
    }

    private void retire(String volumeId, Path target, String pod) throws VolumeException {
        try {
            publisher.takeDown(volumeId, target);
        } catch (VolumeException refused) {
            if (refused.outcome() != VolumeException.Outcome.FAILED_PRECONDITION) {
                throw refused;
            }
            // Not the volume's mount, or not removable: left as it is, and it keeps refusing the unstage.
            LOG.warning(() -> "publication " + target + " of volume " + volumeId + " belongs to pod " + pod
                    + ", which no longer exists on this node, but was not retired: " + refused.getMessage());
            return;
        }
        RetiredPublications.count();
        LOG.warning(() -> "retired publication " + target + " of volume " + volumeId + " without"
                + " NodeUnpublishVolume: its pod " + pod + " no longer exists on this node");
    }
}
