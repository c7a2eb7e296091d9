package dev.blocknode.transport.fc;

import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;

/** What the Fibre Channel transport read of a stage request: the targets and LUN, or the WWIDs of a present LUN. */
record FcAttachPlan(AttachRequest request, FcVolumeSpec spec) implements AttachPlan {

    /** Names the volume only: the contexts are caller input. */
    @Override
    public String toString() {
        return "FcAttachPlan[volume " + request.volumeId() + "]";
    }
}
