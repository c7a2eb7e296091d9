package dev.blocknode.volume.read;

import java.util.Optional;

/**
 * What health reading asks of fencing: whether a volume was fenced out at the storage. Only the renewals of the
 * fence know it (nothing on the node shows a lost reservation), so VolumeFences answers, and the readers of
 * health depend on this question rather than on the fencing that answers it.
 */
public interface FencedVolumes {

    /** The volume's {@code Fenced} problem while another node holds its storage; empty otherwise. */
    Optional<HealthProblem> problem(String volumeId);
}
