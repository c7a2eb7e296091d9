package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.record.StagingRecords;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.VolumeCapability;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * How a NodeStageVolume relates to what an earlier attempt recorded: the same device or a refusal, the same
 * capability once it binds, the same filesystem once this plugin made one. Pure decisions on the request and
 * the record, made before the host is touched; the messages echo key names, never values.
 */
final class StageRetryRules {

    private StageRetryRules() {
    }

    /** The filesystem the request names, if any; INVALID_ARGUMENT for one this plugin does not make. */
    static Optional<FilesystemType> requestedFilesystem(VolumeCapability capability) throws VolumeException {
        if (!(capability.accessType() instanceof AccessType.Mount mount) || mount.fsType().isEmpty()) {
            return Optional.empty();
        }
        Optional<FilesystemType> type = FilesystemType.byName(mount.fsType());
        if (type.isEmpty()) {
            throw VolumeException.invalid("volume_capability.mount.fs_type is not a filesystem this plugin mounts;"
                    + " supported: ext4, xfs");
        }
        return type;
    }

    /** The recorded attach and the requested one name the same device (see {@link #differingDeviceKeys}). */
    static boolean sameAttach(StagingRecord recorded, Transport transport, AttachRequest request) {
        return recorded.getTransport().equals(transport.name()) && differingDeviceKeys(recorded, request).isEmpty();
    }

    /**
     * A volume whose device is recorded (attached, maybe mounted and published) is not re-staged from
     * another one: that would say OK while the staging path still holds the first device, or leave the
     * first one attached under a record that forgot it. Only the key names are echoed, never values.
     */
    static void requireSameDevice(StagingRecord recorded, Transport transport, AttachRequest request)
            throws VolumeException {
        String staged = "volume " + recorded.getVolumeId() + " is already staged at " + recorded.getStagingPath()
                + " from device " + recorded.getDevice().getPath() + " (transport " + recorded.getTransport() + ")";
        if (!recorded.getTransport().equals(transport.name())) {
            throw VolumeException.alreadyExists(staged + "; the request names a device of transport "
                    + transport.name() + "; unstage it first");
        }
        List<String> differing = differingDeviceKeys(recorded, request);
        if (!differing.isEmpty()) {
            throw VolumeException.alreadyExists(staged + "; the request names another device: the contexts' "
                    + differing + " differ from those it was staged with; unstage it first");
        }
    }

    /**
     * The context keys whose value differs between the recorded attach and the request, each read as a
     * transport reads it (publish_context over volume_context, a blank value as absent): a key moving from
     * one context to the other with the same value names the same device. The "transport" key is left out:
     * the transport it selects is compared by name.
     */
    private static List<String> differingDeviceKeys(StagingRecord recorded, AttachRequest request) {
        AttachRequest was = StagingRecords.attachRequest(recorded);
        SortedSet<String> keys = new TreeSet<>();
        for (AttachRequest contexts : List.of(was, request)) {
            keys.addAll(contexts.volumeContext().keySet());
            keys.addAll(contexts.publishContext().keySet());
        }
        keys.remove(Transports.TRANSPORT_KEY);
        return keys.stream().filter(key -> !was.key(key).equals(request.key(key))).toList();
    }

    /**
     * The request must agree with what the record binds. Once the volume was staged (or its filesystem is
     * mounted at the staging path), that is the whole capability; before, the record promised nothing
     * (a crash stopped the attempt short of the mount) except the type of a filesystem this plugin made,
     * which is a fact of the device.
     */
    static void requireCompatible(StagingRecord record, VolumeCapability capability,
                                          Optional<FilesystemType> requestedFs, boolean capabilityBinds)
            throws VolumeException {
        if (!capabilityBinds) {
            if (record.hasMount() && record.getMount().getFormattedHere()) {
                requireSameFilesystem(record, requestedFs);
            }
            return;
        }
        String volume = record.getVolumeId();
        if (record.hasBlock() != capability.isBlock()) {
            throw VolumeException.alreadyExists("volume " + volume + " is already staged for "
                    + (record.hasBlock() ? "block" : "filesystem") + " access, the request asks for "
                    + (capability.isBlock() ? "block" : "filesystem") + " access");
        }
        if (!record.getAccessMode().equals(capability.accessMode().name())) {
            throw VolumeException.alreadyExists("volume " + volume + " is already staged with access mode "
                    + record.getAccessMode() + ", the request asks for " + capability.accessMode());
        }
        if (capability.accessType() instanceof AccessType.Mount mount) {
            requireSameFilesystem(record, requestedFs);
            SelinuxMountContexts.requireSameAsStaged(record, mount);
            if (!record.getMount().getMountFlagsList().equals(mount.mountFlags())) {
                throw VolumeException.alreadyExists("volume " + volume + " is already staged with other mount"
                        + " flags: the request " + flagDifference(record.getMount().getMountFlagsList(),
                        mount.mountFlags()) + "; unstage it first");
            }
        }
    }

    /**
     * What the requested mount flags change against the staged ones, named flag by flag rather than as two whole
     * lists, so that the message points at the one flag that differs. The order counts (a later flag overrides an
     * earlier one), so the same flags in another order differ too.
     */
    static String flagDifference(List<String> staged, List<String> requested) {
        List<String> added = requested.stream().filter(flag -> !staged.contains(flag)).toList();
        List<String> dropped = staged.stream().filter(flag -> !requested.contains(flag)).toList();
        if (added.isEmpty() && dropped.isEmpty()) {
            return "has the same flags in another order";
        }
        List<String> parts = new ArrayList<>(2);
        if (!added.isEmpty()) {
            parts.add("adds " + added);
        }
        if (!dropped.isEmpty()) {
            parts.add("drops " + dropped);
        }
        return String.join(" and ", parts);
    }

    private static void requireSameFilesystem(StagingRecord record, Optional<FilesystemType> requestedFs)
            throws VolumeException {
        String stagedFs = record.getMount().getFsType();
        if (requestedFs.isPresent() && !stagedFs.isEmpty() && !stagedFs.equals(requestedFs.get().kernelName())) {
            throw VolumeException.alreadyExists("volume " + record.getVolumeId() + " is already staged as " + stagedFs
                    + ", the request asks for " + requestedFs.get().kernelName());
        }
    }
}
