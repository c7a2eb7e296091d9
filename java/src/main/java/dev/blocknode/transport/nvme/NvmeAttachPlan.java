package dev.blocknode.transport.nvme;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyProblems;

import java.util.Optional;

/** What the NVMe/TCP transport read of a stage request: the subsystem's keys and the DH-HMAC-CHAP keys, if any. */
record NvmeAttachPlan(AttachRequest request, NvmeVolumeSpec spec, Optional<DhchapKeys> keys) implements AttachPlan {

    /** The plan, or empty after recording in {@code problems} every key and secret that is missing or malformed. */
    static Optional<NvmeAttachPlan> read(AttachRequest request, KeyProblems problems) throws VolumeException {
        Optional<NvmeVolumeSpec> spec = NvmeVolumeSpec.read(request, problems);
        Optional<Optional<DhchapKeys>> keys = problems.check(() -> DhchapKeys.from(request.secrets()));
        return spec.isPresent() && keys.isPresent()
                ? Optional.of(new NvmeAttachPlan(request, spec.get(), keys.get())) : Optional.empty();
    }

    /** Names the volume only: the contexts are caller input, the keys secrets. */
    @Override
    public String toString() {
        return "NvmeAttachPlan[volume " + request.volumeId() + "]";
    }
}
