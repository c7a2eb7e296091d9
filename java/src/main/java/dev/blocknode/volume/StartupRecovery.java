package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.volume.request.Requests;

import java.util.List;
import java.util.logging.Logger;

/**
 * Finishes, at start and before the socket opens, what a crash cut short and kubelet might never come
 * back for: an attach (phase ATTACHING: kubelet saw the call fail and treats the volume as not staged; if
 * it still wants it, its retry attaches anew) is undone, and a teardown (phase UNSTAGING: kubelet asked
 * for it and every publication was gone) is finished. After a restart of its own, kubelet rebuilds its
 * state from the mounts it finds, so a half-released LUN with nothing mounted would otherwise stay on
 * the node forever. Both run the ordinary NodeUnstageVolume path, so they are exactly as safe and as
 * idempotent as kubelet's own retry; a volume halfway through staging (STAGING) or staged is left staged:
 * kubelet still wants it. Of a staged volume, only the publications whose pods are gone are retired
 * ({@link StalePublications}): kubelet has forgotten them and would otherwise find the volume published for
 * ever when it comes to unstage it.
 *
 * This runs before the socket opens so that kubelet's retries cannot race it; each teardown is bounded by
 * the transports' own limits. One that fails is logged and left for kubelet's retry, never blocking start.
 */
public final class StartupRecovery {

    private static final Logger LOG = Logger.getLogger(StartupRecovery.class.getName());

    /** How many interrupted operations were finished and how many are left for kubelet. */
    public record Outcome(int finished, int failed) {
    }

    private final NodeVolumes volumes;

    public StartupRecovery(NodeVolumes volumes) {
        this.volumes = volumes;
    }

    public Outcome run(List<StagingRecord> interrupted) {
        int finished = 0;
        int failed = 0;
        for (StagingRecord record : interrupted) {
            String volume = record.getVolumeId();
            String what = "the interrupted " + (record.getPhase() == StagePhase.ATTACHING ? "attach" : "teardown")
                    + " of volume " + volume;
            try {
                volumes.unstage(new Requests.Unstage(volume, record.getStagingPath()));
                finished++;
                LOG.info(() -> "startup: finished " + what);
            } catch (VolumeException | RuntimeException e) {
                failed++;
                LOG.warning(() -> "startup: could not finish " + what + " (left for kubelet's retry): "
                        + e.getMessage());
            }
        }
        return new Outcome(finished, failed);
    }

    /** Retires the publications of these staged volumes whose pods are gone; each one is logged and counted. */
    public void retireStalePublications(List<StagingRecord> published) {
        for (StagingRecord record : published) {
            try {
                volumes.retireStalePublications(record.getVolumeId());
            } catch (VolumeException | RuntimeException e) {
                LOG.warning(() -> "startup: could not retire the stale publications of volume " + record.getVolumeId()
                        + " (NodeUnstageVolume tries again): " + e.getMessage());
            }
        }
    }
}
