package dev.blocknode.e2e.controller;

import dev.blocknode.csi.v1.ControllerExpandVolumeRequest;
import dev.blocknode.csi.v1.ControllerExpandVolumeResponse;
import dev.blocknode.csi.v1.ControllerGetCapabilitiesRequest;
import dev.blocknode.csi.v1.ControllerGetCapabilitiesResponse;
import dev.blocknode.csi.v1.ControllerGrpc;
import dev.blocknode.csi.v1.ControllerPublishVolumeRequest;
import dev.blocknode.csi.v1.ControllerPublishVolumeResponse;
import dev.blocknode.csi.v1.ControllerServiceCapability;
import dev.blocknode.csi.v1.ControllerUnpublishVolumeRequest;
import dev.blocknode.csi.v1.ControllerUnpublishVolumeResponse;
import dev.blocknode.csi.v1.CreateVolumeRequest;
import dev.blocknode.csi.v1.CreateVolumeResponse;
import dev.blocknode.csi.v1.DeleteVolumeRequest;
import dev.blocknode.csi.v1.DeleteVolumeResponse;
import dev.blocknode.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.blocknode.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.blocknode.csi.v1.Volume;
import dev.blocknode.csi.v1.VolumeCapability;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;

import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A CSI Controller service for tests: volumes are files exposed by a {@link VolumeBackend}, as loop devices
 * on this machine (the plugin's {@code local} transport, volume_context {@code devicePath}) or as LUNs of a
 * local tgt iSCSI target (the plugin's {@code iscsi} transport); see {@link Volumes}. The CSI logic here is
 * the same for both. CreateVolume's parameters are passed on in the volume_context (csi-sanity's
 * {@code --csi.testvolumeparameters}: {@code encryption: luks2} makes every volume an encrypted one). There is
 * one node, the one named at startup. Everything not listed in ControllerGetCapabilities is
 * UNIMPLEMENTED (the generated base class answers so).
 *
 * <p>Supported capabilities: block, or mount with fs_type "", ext4 or xfs; the single-node access modes only
 * (a loop device exists on one node only): SINGLE_NODE_WRITER, SINGLE_NODE_READER_ONLY, and the
 * SINGLE_NODE_SINGLE_WRITER / SINGLE_NODE_MULTI_WRITER pair, claimed with SINGLE_NODE_MULTI_WRITER as the
 * plugin claims it, so that csi-sanity checks the node's rules for them.
 */
public final class TestControllerService extends ControllerGrpc.ControllerImplBase {

    private static final Logger LOG = Logger.getLogger(TestControllerService.class.getName());

    /** Sizes are whole MiB: every filesystem's block size divides them. */
    static final long GRANULE = 1L << 20;
    static final long DEFAULT_CAPACITY = 1L << 30;
    private static final Set<String> FS_TYPES = Set.of("", "ext4", "xfs");
    private static final Set<VolumeCapability.AccessMode.Mode> ACCESS_MODES = Set.of(
            VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER,
            VolumeCapability.AccessMode.Mode.SINGLE_NODE_READER_ONLY,
            VolumeCapability.AccessMode.Mode.SINGLE_NODE_SINGLE_WRITER,
            VolumeCapability.AccessMode.Mode.SINGLE_NODE_MULTI_WRITER);

    private final Volumes volumes;
    private final String nodeId;

    public TestControllerService(Volumes volumes, String nodeId) {
        this.volumes = volumes;
        this.nodeId = nodeId;
    }

    @Override
    public void controllerGetCapabilities(ControllerGetCapabilitiesRequest request,
                                          StreamObserver<ControllerGetCapabilitiesResponse> observer) {
        answer("ControllerGetCapabilities", observer, () -> {
            ControllerGetCapabilitiesResponse.Builder response = ControllerGetCapabilitiesResponse.newBuilder();
            for (ControllerServiceCapability.RPC.Type type : List.of(
                    ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
                    ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME,
                    ControllerServiceCapability.RPC.Type.EXPAND_VOLUME,
                    ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER)) {
                response.addCapabilities(ControllerServiceCapability.newBuilder()
                        .setRpc(ControllerServiceCapability.RPC.newBuilder().setType(type)));
            }
            return response.build();
        });
    }

    @Override
    public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> observer) {
        answer("CreateVolume", observer, () -> {
            String name = required("name", request.getName());
            if (request.getVolumeCapabilitiesCount() == 0) {
                throw invalid("volume_capabilities is required");
            }
            for (VolumeCapability capability : request.getVolumeCapabilitiesList()) {
                Optional<String> why = unsupported(capability);
                if (why.isPresent()) {
                    throw invalid("volume_capabilities: " + why.get());
                }
            }
            if (request.hasVolumeContentSource()) {
                throw invalid("volume_content_source is not supported: this controller cannot clone or restore");
            }
            long required = request.getCapacityRange().getRequiredBytes();
            long limit = request.getCapacityRange().getLimitBytes();
            long size = capacityFor(required, limit);
            boolean mountAccess = request.getVolumeCapabilitiesList().stream()
                    .anyMatch(c -> c.getAccessTypeCase() == VolumeCapability.AccessTypeCase.MOUNT);
            Volumes.Volume volume;
            synchronized (volumes) {
                Optional<Volumes.Volume> existing = volumes.byName(name);
                if (existing.isPresent()) {
                    long have = existing.get().capacityBytes();
                    if (have < required || (limit > 0 && have > limit)) {
                        throw Status.ALREADY_EXISTS.withDescription("volume \"" + name + "\" already exists with "
                                + have + " bytes, outside the requested range [" + required + ", "
                                + (limit > 0 ? limit : "unlimited") + "]").asRuntimeException();
                    }
                    volume = existing.get();
                } else {
                    try {
                        volume = volumes.create(name, size, mountAccess, request.getParametersMap());
                    } catch (IllegalArgumentException e) {
                        throw invalid("parameters: " + e.getMessage());
                    }
                }
            }
            return CreateVolumeResponse.newBuilder().setVolume(toCsi(volume)).build();
        });
    }

    @Override
    public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> observer) {
        answer("DeleteVolume", observer, () -> {
            String id = required("volume_id", request.getVolumeId());
            synchronized (volumes) {
                Optional<Volumes.Volume> volume = volumes.byId(id);
                if (volume.isPresent() && !volume.get().publishedNodes().isEmpty()) {
                    throw Status.FAILED_PRECONDITION.withDescription("volume " + id + " is still published to "
                            + volume.get().publishedNodes()).asRuntimeException();
                }
                // An unknown id is a volume that is already gone: success, as the spec asks.
                volumes.delete(id);
            }
            return DeleteVolumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void controllerPublishVolume(ControllerPublishVolumeRequest request,
                                        StreamObserver<ControllerPublishVolumeResponse> observer) {
        answer("ControllerPublishVolume", observer, () -> {
            String id = required("volume_id", request.getVolumeId());
            String node = required("node_id", request.getNodeId());
            if (!request.hasVolumeCapability()) {
                throw invalid("volume_capability is required");
            }
            Optional<String> why = unsupported(request.getVolumeCapability());
            if (why.isPresent()) {
                throw invalid("volume_capability: " + why.get());
            }
            synchronized (volumes) {
                if (volumes.byId(id).isEmpty()) {
                    throw Status.NOT_FOUND.withDescription("no volume " + id).asRuntimeException();
                }
                if (!node.equals(nodeId)) {
                    throw Status.NOT_FOUND.withDescription("no node " + node + "; the only node is " + nodeId)
                            .asRuntimeException();
                }
                volumes.publish(id, node);
            }
            // The node plugin finds the device through volume_context; nothing to add here.
            return ControllerPublishVolumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void controllerUnpublishVolume(ControllerUnpublishVolumeRequest request,
                                          StreamObserver<ControllerUnpublishVolumeResponse> observer) {
        answer("ControllerUnpublishVolume", observer, () -> {
            String id = required("volume_id", request.getVolumeId());
            // node_id is optional (empty: every node). An unknown volume or node is already unpublished:
            // the spec asks for success, and csi-sanity's cleanup relies on it after DeleteVolume.
            volumes.unpublish(id, request.getNodeId());
            return ControllerUnpublishVolumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest request,
                                           StreamObserver<ValidateVolumeCapabilitiesResponse> observer) {
        answer("ValidateVolumeCapabilities", observer, () -> {
            String id = required("volume_id", request.getVolumeId());
            if (request.getVolumeCapabilitiesCount() == 0) {
                throw invalid("volume_capabilities is required");
            }
            if (volumes.byId(id).isEmpty()) {
                throw Status.NOT_FOUND.withDescription("no volume " + id).asRuntimeException();
            }
            for (VolumeCapability capability : request.getVolumeCapabilitiesList()) {
                Optional<String> why = unsupported(capability);
                if (why.isPresent()) {
                    return ValidateVolumeCapabilitiesResponse.newBuilder().setMessage(why.get()).build();
                }
            }
            return ValidateVolumeCapabilitiesResponse.newBuilder()
                    .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                            .addAllVolumeCapabilities(request.getVolumeCapabilitiesList())
                            .putAllVolumeContext(request.getVolumeContextMap())
                            .putAllParameters(request.getParametersMap())
                            .putAllMutableParameters(request.getMutableParametersMap()))
                    .build();
        });
    }

    @Override
    public void controllerExpandVolume(ControllerExpandVolumeRequest request,
                                       StreamObserver<ControllerExpandVolumeResponse> observer) {
        answer("ControllerExpandVolume", observer, () -> {
            String id = required("volume_id", request.getVolumeId());
            if (!request.hasCapacityRange()) {
                throw invalid("capacity_range is required");
            }
            if (request.hasVolumeCapability()) {
                Optional<String> why = unsupported(request.getVolumeCapability());
                if (why.isPresent()) {
                    throw invalid("volume_capability: " + why.get());
                }
            }
            long required = request.getCapacityRange().getRequiredBytes();
            long limit = request.getCapacityRange().getLimitBytes();
            long size = capacityFor(required, limit);
            Volumes.Volume volume;
            synchronized (volumes) {
                volume = volumes.byId(id).orElseThrow(() ->
                        Status.NOT_FOUND.withDescription("no volume " + id).asRuntimeException());
                if (limit > 0 && volume.capacityBytes() > limit) {
                    throw Status.OUT_OF_RANGE.withDescription("volume " + id + " already has "
                            + volume.capacityBytes() + " bytes, more than limit_bytes " + limit
                            + "; volumes never shrink").asRuntimeException();
                }
                if (size > volume.capacityBytes()) {
                    volume = volumes.expand(id, size);
                }
            }
            boolean mount = request.hasVolumeCapability()
                    ? request.getVolumeCapability().getAccessTypeCase() == VolumeCapability.AccessTypeCase.MOUNT
                    : volume.mountAccess();
            return ControllerExpandVolumeResponse.newBuilder()
                    .setCapacityBytes(volume.capacityBytes())
                    // A filesystem must be grown by the node; a raw block device is usable at its new size.
                    .setNodeExpansionRequired(mount)
                    .build();
        });
    }

    /** Why this controller cannot serve the capability, or empty when it can. */
    static Optional<String> unsupported(VolumeCapability capability) {
        switch (capability.getAccessTypeCase()) {
            case BLOCK -> {
            }
            case MOUNT -> {
                String fsType = capability.getMount().getFsType();
                if (!FS_TYPES.contains(fsType)) {
                    return Optional.of("fs_type \"" + fsType + "\" is not supported (ext4 or xfs)");
                }
            }
            default -> {
                return Optional.of("access_type must be block or mount");
            }
        }
        VolumeCapability.AccessMode.Mode mode = capability.getAccessMode().getMode();
        if (!ACCESS_MODES.contains(mode)) {
            return Optional.of("access mode " + mode + " is not supported (supported: " + ACCESS_MODES + ")");
        }
        return Optional.empty();
    }

    /** The size to allocate: required_bytes rounded up to whole MiB, or a default when none is asked for. */
    static long capacityFor(long required, long limit) {
        if (required < 0 || limit < 0) {
            throw invalid("capacity_range must not be negative");
        }
        if (limit > 0 && required > limit) {
            throw Status.OUT_OF_RANGE.withDescription("required_bytes " + required + " exceeds limit_bytes " + limit)
                    .asRuntimeException();
        }
        long size;
        if (required > 0) {
            size = Math.ceilDiv(required, GRANULE) * GRANULE;
        } else if (limit > 0) {
            size = Math.min(DEFAULT_CAPACITY, limit / GRANULE * GRANULE);
        } else {
            size = DEFAULT_CAPACITY;
        }
        if (size == 0 || (limit > 0 && size > limit)) {
            throw Status.OUT_OF_RANGE.withDescription("no whole number of MiB fits in [" + required + ", " + limit
                    + "] bytes").asRuntimeException();
        }
        return size;
    }

    private static Volume toCsi(Volumes.Volume volume) {
        return Volume.newBuilder()
                .setVolumeId(volume.id())
                .setCapacityBytes(volume.capacityBytes())
                .putAllVolumeContext(volume.volumeContext())
                .build();
    }

    private static String required(String field, String value) {
        if (value.isEmpty()) {
            throw invalid(field + " is required");
        }
        return value;
    }

    private static StatusRuntimeException invalid(String message) {
        return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
    }

    @FunctionalInterface
    interface Body<T> {
        T run() throws IOException;
    }

    /** One shape for every method: a StatusRuntimeException is the answer; anything else is INTERNAL. */
    static <T> void answer(String method, StreamObserver<T> observer, Body<T> body) {
        T response;
        try {
            response = body.run();
        } catch (StatusRuntimeException e) {
            LOG.fine(() -> method + ": " + e.getStatus());
            observer.onError(e);
            return;
        } catch (VolumeBackend.InUseException e) {
            // DeleteVolume and ControllerExpandVolume: the spec's answer for a volume in use.
            LOG.info(() -> method + ": " + e.getMessage());
            observer.onError(Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException());
            return;
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, method + " failed", e);
            observer.onError(Status.INTERNAL.withDescription(method + ": " + e.getMessage()).withCause(e)
                    .asRuntimeException());
            return;
        }
        observer.onNext(response);
        observer.onCompleted();
    }
}
