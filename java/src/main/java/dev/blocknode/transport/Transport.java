package dev.blocknode.transport;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;

import java.io.IOException;
import java.util.Optional;
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
     * Checks the request's keys without touching the host, and keeps what it read of them for {@link
     * #attach(AttachPlan)}, so that a stage parses them once.
     *
     * @throws VolumeException INVALID_ARGUMENT naming the missing or malformed key
     */
    AttachPlan validate(AttachRequest request) throws VolumeException;

    /**
     * Every problem of the request's keys and secrets, not only the first, read as {@code problems} says
     * ({@link KeyProblems.Reading}); without touching the host. The default records {@link #validate}'s one.
     *
     * @throws VolumeException only for a failure that is not the request's (never INVALID_ARGUMENT)
     */
    default void check(AttachRequest request, KeyProblems problems) throws VolumeException {
        problems.check(() -> {
            validate(request);
            return null;
        });
    }

    /**
     * Makes the device present on this node and verifies it is the volume asked for.
     *
     * @param plan what this transport's {@link #validate} read of the request; never another transport's
     */
    Attachment attach(AttachPlan plan) throws VolumeException;

    /** {@link #attach(AttachPlan)} for a caller that has no plan: the request's keys read here, once. */
    default Attachment attach(AttachRequest request) throws VolumeException {
        return attach(validate(request));
    }

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
     * What {@link #attach} would have returned for {@code device}, derived from the host (sysfs) instead of
     * a staging record: for a teardown whose record is gone, so that {@link #detach} can release it as if
     * it had been recorded. Empty when the device is not one this transport attaches (a device already on
     * the node is never detached, so the local transport recognizes nothing).
     */
    default Optional<Attachment> attachmentOf(DeviceNumber device) throws VolumeException {
        return Optional.empty();
    }

    /**
     * Whether a rebuilt record names this transport for a device that no transport recognizes
     * ({@link #attachmentOf} empty for all): true only for a transport that never detaches, since nothing says
     * how such a device came to the node (a loop device, a disk already there).
     */
    default boolean holdsUnrecognizedDevices() {
        return false;
    }

    /**
     * After the storage grew the volume, makes the node see the new size (path rescans, map resize) so the
     * filesystem can grow. A device already on the node needs nothing.
     */
    default void refreshSize(Attachment attachment) throws VolumeException {
    }

    /**
     * How the attached device's paths serve I/O now, for VolumeCondition and the path gauges: a multipath map
     * keeps serving on the paths it has left, so a lost path is invisible to the filesystem. Reads sysfs only
     * (asked for every volume once a minute, and on every metrics scrape). Empty for a device without SCSI
     * paths, as a device already on the node.
     */
    default Optional<PathReport> pathHealth(Attachment attachment) throws IOException {
        return Optional.empty();
    }

    /**
     * Fencing at the storage for this transport's LUNs (SCSI-3 persistent reservations); empty where there is none:
     * a device already on the node, and NVMe/TCP (not built: the guest kernel's target has no reservations).
     */
    default Optional<Fencing> fencing() {
        return Optional.empty();
    }

    /**
     * Bringing back the paths of staged volumes that returned, and sweeping what the transport made that no record
     * names, for the repair loop; empty for a transport whose paths come back by themselves and that makes nothing
     * shared (a device already on the node).
     */
    default Optional<PathRepair> pathRepair() {
        return Optional.empty();
    }
}
