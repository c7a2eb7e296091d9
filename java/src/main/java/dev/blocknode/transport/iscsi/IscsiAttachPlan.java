package dev.blocknode.transport.iscsi;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyProblems;

import java.util.Optional;

/** What the iSCSI transport read of a stage request: the target's keys and the CHAP credentials, if any. */
record IscsiAttachPlan(AttachRequest request, IscsiVolumeSpec spec, Optional<ChapCredentials> chap)
        implements AttachPlan {

    /** The plan, or empty after recording in {@code problems} every key and secret that is missing or malformed. */
    static Optional<IscsiAttachPlan> read(AttachRequest request, KeyProblems problems) throws VolumeException {
        Optional<IscsiVolumeSpec> spec = IscsiVolumeSpec.read(request, problems);
        Optional<Optional<ChapCredentials>> chap = problems.check(() -> ChapCredentials.from(request.secrets()));
        return spec.isPresent() && chap.isPresent()
                ? Optional.of(new IscsiAttachPlan(request, spec.get(), chap.get())) : Optional.empty();
    }

    /** Names the volume only: the contexts are caller input, the credentials secrets. */
    @Override
    public String toString() {
        return "IscsiAttachPlan[volume " + request.volumeId() + "]";
    }
}
