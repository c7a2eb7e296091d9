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
     * Checks the request's keys without touching the host.
     *
     * @throws VolumeException INVALID_ARGUMENT naming the missing or malformed key
     */
    void validate(AttachRequest request) throws VolumeException;

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
     * Brings back into use the paths of a staged volume that returned after the kernel had removed them (a remote
     * port or session back after its loss timeout), each path's identity verified before multipath may use it;
     * never removes or logs out anything that carries the volume, and does nothing but report while every path is
     * down. Called by the repair loop while no call holds the volume, for a volume staged without fencing (see the
     * overload with a key for one staged with it). A transport whose paths come back by themselves repairs nothing.
     */
    default PathRepair repairPaths(AttachRequest request, Attachment attachment) throws VolumeException {
        return PathRepair.NONE;
    }

    /**
     * {@link #repairPaths(AttachRequest, Attachment)} for a volume staged with fencing when {@code fenceKey} (the key
     * its staging record holds) is present: a path may then be brought back only once it is registered with this
     * node's key, and only while the LUN is still reserved by this node, or its writes would fail at the storage
     * (or, for a node fenced out, get through again). A transport that cannot register a path repairs no fenced
     * volume: it reports that it waits. Without a key, the repair of an unfenced volume.
     */
    default PathRepair repairPaths(AttachRequest request, Attachment attachment, Optional<FenceKey> fenceKey)
            throws VolumeException {
        if (fenceKey.isPresent()) {
            return PathRepair.waiting("transport " + name() + " cannot register a returned path with this node's"
                    + " reservation key, so the lost paths of a fenced volume are not brought back");
        }
        return repairPaths(request, attachment);
    }

    /**
     * The repair loop's interval, said once when the loop is made: a transport that spaces its attempts at an
     * address ({@link RetryBackoff}) waits no longer than one interval after a first failure, so the next pass tries
     * again. A transport that keeps no such back-off ignores it.
     */
    default void repairEvery(java.time.Duration interval) {
    }

    /**
     * Whether {@link #repairPaths} could do anything for the volume now: a look at sysfs with no side effect, taken
     * without holding the volume. The repair loop holds a volume (which turns kubelet's calls on it away with
     * ABORTED while it does) only when this says yes, so that a pass over healthy volumes never competes with a
     * stage or publish. When unsure, yes: the repair itself then says what is wrong.
     */
    default boolean mayRepairPaths(AttachRequest request, Attachment attachment) {
        return false;
    }

    /**
     * Removes what this transport made on the node that no staging record names any more (a session and its node
     * record left by an undo that could not finish), and only what it can prove it made; what merely looks orphaned is
     * reported in {@link OrphanSweep#kept}, never touched. Called by the repair loop, after its pass over the staged
     * volumes, without holding any volume: the transport takes its own locks and reads {@code recorded} again under
     * them. A transport that makes nothing shared sweeps nothing.
     */
    default OrphanSweep sweepOrphans(OrphanSweep.Recorded recorded) throws VolumeException {
        return OrphanSweep.NONE;
    }

    /**
     * Fencing at the storage for this transport's LUNs (SCSI-3 persistent reservations); empty where there is none:
     * a device already on the node, and NVMe/TCP (not built: the guest kernel's target has no reservations).
     */
    default Optional<Fencing> fencing() {
        return Optional.empty();
    }
}
