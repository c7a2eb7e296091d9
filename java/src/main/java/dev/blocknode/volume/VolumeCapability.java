package dev.blocknode.volume;

/** A validated CSI VolumeCapability. */
public record VolumeCapability(AccessType accessType, AccessMode accessMode) {

    public boolean isBlock() {
        return accessType instanceof AccessType.Block;
    }
}
