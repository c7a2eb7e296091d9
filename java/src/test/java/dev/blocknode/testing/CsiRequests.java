package dev.blocknode.testing;

import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.VolumeCapability;

import java.nio.file.Path;
import java.util.List;

/** Requests as kubelet sends them, for tests. */
public final class CsiRequests {

    private CsiRequests() {
    }

    public static VolumeCapability mount(String fsType, VolumeCapability.AccessMode.Mode mode, String... flags) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType).addAllMountFlags(List.of(flags)))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode))
                .build();
    }

    public static VolumeCapability mount(String fsType) {
        return mount(fsType, VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER);
    }

    public static VolumeCapability block(VolumeCapability.AccessMode.Mode mode) {
        return VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode))
                .build();
    }

    public static VolumeCapability block() {
        return block(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER);
    }

    public static NodeStageVolumeRequest stage(String volumeId, Path device, Path staging, VolumeCapability cap) {
        return NodeStageVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setStagingTargetPath(staging.toString())
                .setVolumeCapability(cap)
                .putVolumeContext("devicePath", device.toString())
                .build();
    }

    public static NodePublishVolumeRequest publish(String volumeId, Path staging, Path target, VolumeCapability cap,
                                                   boolean readonly) {
        return NodePublishVolumeRequest.newBuilder()
                .setVolumeId(volumeId)
                .setStagingTargetPath(staging.toString())
                .setTargetPath(target.toString())
                .setVolumeCapability(cap)
                .setReadonly(readonly)
                .build();
    }

    public static NodeUnpublishVolumeRequest unpublish(String volumeId, Path target) {
        return NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volumeId).setTargetPath(target.toString()).build();
    }

    public static NodeUnstageVolumeRequest unstage(String volumeId, Path staging) {
        return NodeUnstageVolumeRequest.newBuilder().setVolumeId(volumeId).setStagingTargetPath(staging.toString())
                .build();
    }
}
