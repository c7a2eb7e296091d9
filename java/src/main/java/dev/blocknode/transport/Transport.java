package dev.blocknode.transport;

import dev.blocknode.volume.VolumeException;

import java.util.Set;

/**
 * One way a block device reaches this node: local (a device already here), iSCSI, Fibre Channel.
 * attach and detach are idempotent: run again after a crash or a timeout, they finish what was started.
 */
public interface Transport {

    /** The name in volume_context's "transport" key and in staging records. */
    String name();

    /** The volume_context keys that identify this transport when "transport" is not given. */
    Set<String> identifyingKeys();

    /**
     * Checks the request's keys without touching the host.
     *
     * @throws VolumeException INVALID_ARGUMENT naming the missing or malformed key
     */
    void validate(AttachRequest request) throws VolumeException;

    /** Makes the device present on this node and verifies it is the volume asked for. */
    Attachment attach(AttachRequest request) throws VolumeException;

    /** Releases what attach set up. Called only after the device is unmounted and flushed. */
    void detach(Attachment attachment) throws VolumeException;

    /**
     * Undoes whatever an attach with this request may have done before it was cut short (the plugin died
     * while the staging record said ATTACHING): the device may be fully, partly or not at all attached, and
     * no device was recorded. Nothing that another volume or process holds is touched. The request carries
     * no secrets (they are never recorded).
     */
    void abandon(AttachRequest request) throws VolumeException;

    /**
     * After the storage grew the volume, makes the node see the new size (path rescans, map resize) so the
     * filesystem can grow. A device already on the node needs nothing.
     */
    default void refreshSize(Attachment attachment) throws VolumeException {
    }
}
