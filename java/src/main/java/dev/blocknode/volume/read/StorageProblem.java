package dev.blocknode.volume.read;

/**
 * One adverse condition of the storage this node reaches, for NodeGetStorageHealth. {@code reason} is a short
 * CamelCase name, unique per severity (one per transport).
 */
public record StorageProblem(Severity severity, String reason, String message) {

    /** Still reachable on fewer paths, or not reachable from this node at all. */
    public enum Severity { DEGRADED, UNREACHABLE }
}
