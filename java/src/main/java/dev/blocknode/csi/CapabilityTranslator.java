package dev.blocknode.csi;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.VolumeCapability;

/**
 * Turns a wire VolumeCapability into the domain's, refusing what the node cannot honour: the access type and
 * mode, the fs_type, and the mount flags checked against that filesystem's own options. The one validator of a
 * capability: the Node service (stage, publish, expand) and the Controller service (ControllerPublishVolume,
 * ValidateVolumeCapabilities) both call it, so the controller refuses exactly what the node would.
 */
final class CapabilityTranslator {

    private CapabilityTranslator() {
    }

    /** volume_capability, which the request must carry (INVALID_ARGUMENT when it does not), translated. */
    static VolumeCapability required(boolean present, dev.blocknode.csi.v1.VolumeCapability wire)
            throws VolumeException {
        if (!present) {
            throw VolumeException.invalid("volume_capability is required");
        }
        return translate("volume_capability", wire);
    }

    static VolumeCapability translate(String field, dev.blocknode.csi.v1.VolumeCapability wire) throws VolumeException {
        AccessMode mode = accessMode(field, wire);
        AccessType type = switch (wire.getAccessTypeCase()) {
            case BLOCK -> new AccessType.Block();
            case MOUNT -> mount(field, wire.getMount(), mode);
            case ACCESSTYPE_NOT_SET -> throw VolumeException.invalid(field + ".access_type must be block or mount");
        };
        return new VolumeCapability(type, mode);
    }

    private static AccessMode accessMode(String field, dev.blocknode.csi.v1.VolumeCapability wire)
            throws VolumeException {
        if (!wire.hasAccessMode()) {
            throw VolumeException.invalid(field + ".access_mode is required");
        }
        return switch (wire.getAccessMode().getMode()) {
            case SINGLE_NODE_WRITER -> AccessMode.SINGLE_NODE_WRITER;
            case SINGLE_NODE_READER_ONLY -> AccessMode.SINGLE_NODE_READER_ONLY;
            case MULTI_NODE_READER_ONLY -> AccessMode.MULTI_NODE_READER_ONLY;
            case MULTI_NODE_SINGLE_WRITER -> AccessMode.MULTI_NODE_SINGLE_WRITER;
            case MULTI_NODE_MULTI_WRITER -> AccessMode.MULTI_NODE_MULTI_WRITER;
            case SINGLE_NODE_SINGLE_WRITER -> AccessMode.SINGLE_NODE_SINGLE_WRITER;
            case SINGLE_NODE_MULTI_WRITER -> AccessMode.SINGLE_NODE_MULTI_WRITER;
            case UNKNOWN, UNRECOGNIZED -> throw VolumeException.invalid(field + ".access_mode.mode "
                    + wire.getAccessMode().getModeValue() + " is not a known access mode");
        };
    }

    private static AccessType.Mount mount(String field, dev.blocknode.csi.v1.VolumeCapability.MountVolume wire,
                                          AccessMode mode) throws VolumeException {
        if (mode == AccessMode.MULTI_NODE_MULTI_WRITER) {
            throw VolumeException.invalid(field + ".access_mode MULTI_NODE_MULTI_WRITER with a mount: ext4 and xfs"
                    + " written from several nodes at once are corrupted; use block access");
        }
        if (!wire.getVolumeMountGroup().isEmpty()) {
            throw VolumeException.invalid(field + ".mount.volume_mount_group is not supported by this plugin"
                    + " (it does not advertise VOLUME_MOUNT_GROUP)");
        }
        String fsType = wire.getFsType().strip();
        if (!fsType.isEmpty() && FilesystemType.byName(fsType).isEmpty()) {
            // Never quoted: the value is the caller's.
            throw VolumeException.invalid(field + ".mount.fs_type is not a filesystem this plugin mounts;"
                    + " supported: ext4, xfs (or empty, for the node's --default-fs-type)");
        }
        try {
            return AccessType.Mount.parsed(fsType, wire.getMountFlagsList());
        } catch (IllegalArgumentException e) {
            throw VolumeException.invalid(field + ".mount.mount_flags: " + e.getMessage());
        }
    }
}
