package dev.blocknode.transport.local;

import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;

import java.nio.file.Path;

/** What the local transport read of a stage request: the device path it names, checked to be under /dev. */
record LocalAttachPlan(AttachRequest request, Path named) implements AttachPlan {

    /** Names the volume only: the contexts are caller input. */
    @Override
    public String toString() {
        return "LocalAttachPlan[volume " + request.volumeId() + "]";
    }
}
