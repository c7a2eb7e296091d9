package dev.blocknode.volume.request;

/** A validated CSI VolumeCapability. */
public record VolumeCapability(AccessType accessType, AccessMode accessMode) {

    public boolean isBlock() {
        return accessType instanceof AccessType.Block;
    }
}
