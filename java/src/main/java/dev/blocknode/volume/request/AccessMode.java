package dev.blocknode.volume.request;

/** How many nodes and writers may use a volume at once (the CSI access modes, by their spec names). */
public enum AccessMode {
    SINGLE_NODE_WRITER,
    SINGLE_NODE_READER_ONLY,
    MULTI_NODE_READER_ONLY,
    MULTI_NODE_SINGLE_WRITER,
    MULTI_NODE_MULTI_WRITER,
    /** One publication on this node at a time (Kubernetes ReadWriteOncePod). */
    SINGLE_NODE_SINGLE_WRITER,
    /** Several publications on this node may write (Kubernetes ReadWriteOnce). */
    SINGLE_NODE_MULTI_WRITER;

    public boolean readOnly() {
        return this == SINGLE_NODE_READER_ONLY || this == MULTI_NODE_READER_ONLY;
    }

    public boolean multiNode() {
        return name().startsWith("MULTI_NODE");
    }

    /** Only one target path on this node may hold the volume at a time. */
    public boolean singlePublication() {
        return this == SINGLE_NODE_SINGLE_WRITER;
    }
}
