package dev.blocknode.e2e.controller;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * How the test controller turns a volume's backing file into storage the node plugin can attach: the one
 * part that differs between a loop device on this machine ({@link LoopBackend}, the plugin's local
 * transport) and a LUN of a tgt iSCSI target ({@link TgtBackend}, the plugin's iscsi transport). The
 * registry ({@link Volumes}) owns the files, names, sizes and publications; a backend only exposes a file
 * and takes it away again.
 */
public interface VolumeBackend extends AutoCloseable {

    /**
     * Where a volume's file is exposed.
     *
     * @param where         what a person reads in logs and errors (a loop device, a target's LUN)
     * @param volumeContext what the node plugin needs to attach it (CreateVolume's volume_context)
     */
    record Placement(String where, Map<String, String> volumeContext) {

        public Placement {
            volumeContext = Map.copyOf(volumeContext);
        }
    }

    /** A backend refuses to take away storage that an initiator or a mount is still using. */
    final class InUseException extends IOException {

        public InUseException(String message) {
            super(message);
        }
    }

    /** A short name for logs and flags: "loop" or "tgt". */
    String name();

    /** Exposes {@code file} (already {@code bytes} long) as the volume {@code volumeId}. */
    Placement expose(String volumeId, Path file, long bytes) throws IOException;

    /** The file has grown to {@code bytes}: makes the exposed storage report the new size. */
    Placement grow(Placement placement, Path file, long bytes) throws IOException;

    /**
     * Takes the exposure away. Storage that is already gone is fine.
     *
     * @throws InUseException when the storage is still in use and was left exposed
     */
    void withdraw(Placement placement, Path file) throws IOException;

    /** Releases what the backend set up for all volumes (a target, say); every volume is withdrawn by now. */
    @Override
    default void close() throws IOException {
    }
}
