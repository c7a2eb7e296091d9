package dev.blocknode.csi;

import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeExpandVolumeResponse;
import dev.blocknode.csi.v1.NodeGetCapabilitiesRequest;
import dev.blocknode.csi.v1.NodeGetCapabilitiesResponse;
import dev.blocknode.csi.v1.NodeGetInfoRequest;
import dev.blocknode.csi.v1.NodeGetInfoResponse;
import dev.blocknode.csi.v1.NodeGetStorageHealthRequest;
import dev.blocknode.csi.v1.NodeGetStorageHealthResponse;
import dev.blocknode.csi.v1.NodeGetVolumeHealthRequest;
import dev.blocknode.csi.v1.NodeGetVolumeHealthResponse;
import dev.blocknode.csi.v1.NodeGetVolumeStatsRequest;
import dev.blocknode.csi.v1.NodeGetVolumeStatsResponse;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.csi.v1.NodePublishVolumeRequest;
import dev.blocknode.csi.v1.NodePublishVolumeResponse;
import dev.blocknode.csi.v1.NodeServiceCapability;
import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.csi.v1.NodeStageVolumeResponse;
import dev.blocknode.csi.v1.NodeUnpublishVolumeRequest;
import dev.blocknode.csi.v1.NodeUnpublishVolumeResponse;
import dev.blocknode.csi.v1.NodeUnstageVolumeRequest;
import dev.blocknode.csi.v1.NodeUnstageVolumeResponse;
import dev.blocknode.csi.v1.Topology;
import dev.blocknode.csi.v1.VolumeCondition;
import dev.blocknode.csi.v1.VolumeUsage;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.NodeVolumes;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.read.VolumeStats;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;
import io.grpc.stub.StreamObserver;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The CSI Node service. Each method checks its request's fields in the order the spec lists them, turns
 * it into a domain request, and leaves the work to {@link NodeVolumes}.
 */
public final class NodeService extends NodeGrpc.NodeImplBase {

    private static final NodeServiceCapability.RPC.Type[] CAPABILITIES = {
            NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
            NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
            NodeServiceCapability.RPC.Type.EXPAND_VOLUME,
            // NodeGetVolumeStats' VolumeCondition, for kubelets before 1.37 (CSI 1.13 removed it; csi.proto's top).
            NodeServiceCapability.RPC.Type.VOLUME_CONDITION,
            NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER,
            // What kubelet 1.37 and later ask instead (CSI 1.13).
            NodeServiceCapability.RPC.Type.GET_VOLUME_HEALTH,
            NodeServiceCapability.RPC.Type.GET_STORAGE_HEALTH,
    };

    /**
     * The methods answered from memory, which may run on the server's event loop (see UnixSocketServer). Not
     * NodeGetInfo: under a volume cap it reads the records and sysfs (see VolumeLimit).
     */
    public static final Set<String> ANSWERED_FROM_MEMORY = Set.of(
            NodeGrpc.getNodeGetCapabilitiesMethod().getFullMethodName());

    private final NodeVolumes volumes;
    private final String nodeId;
    private final Map<String, String> topology;

    /**
     * @param topology the segments NodeGetInfo reports as accessible_topology (--topology); empty: none, and then
     *                 the field is left out, as the spec has it for a node not subject to any topology
     */
    public NodeService(NodeVolumes volumes, String nodeId, Map<String, String> topology) {
        this.volumes = volumes;
        this.nodeId = nodeId;
        this.topology = Map.copyOf(topology);
    }

    @Override
    public void nodeStageVolume(NodeStageVolumeRequest request, StreamObserver<NodeStageVolumeResponse> observer) {
        RpcCall.answer("NodeStageVolume", request.getVolumeId(), observer, () -> {
            volumes.stage(stageRequest(request));
            return NodeStageVolumeResponse.getDefaultInstance();
        });
    }

    /** The fields of a NodeStageVolume request, each checked (also for {@link StageRequestCheck}). */
    static Requests.Stage stageRequest(NodeStageVolumeRequest request) throws VolumeException {
        String volumeId = RequestFields.volumeId(request.getVolumeId());
        String staging = RequestFields.path("staging_target_path", request.getStagingTargetPath());
        VolumeCapability capability = CapabilityTranslator.required(request.hasVolumeCapability(), request.getVolumeCapability());
        var volumeContext = RequestFields.context("volume_context", request.getVolumeContextMap());
        var publishContext = RequestFields.context("publish_context", request.getPublishContextMap());
        var secrets = new Secrets(RequestFields.secrets("secrets", request.getSecretsMap()));
        return new Requests.Stage(volumeId, staging, capability, volumeContext, publishContext, secrets);
    }

    @Override
    public void nodeUnstageVolume(NodeUnstageVolumeRequest request,
                                  StreamObserver<NodeUnstageVolumeResponse> observer) {
        RpcCall.answer("NodeUnstageVolume", request.getVolumeId(), observer, () -> {
            String volumeId = RequestFields.volumeId(request.getVolumeId());
            String staging = RequestFields.path("staging_target_path", request.getStagingTargetPath());
            volumes.unstage(new Requests.Unstage(volumeId, staging));
            return NodeUnstageVolumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void nodePublishVolume(NodePublishVolumeRequest request,
                                  StreamObserver<NodePublishVolumeResponse> observer) {
        RpcCall.answer("NodePublishVolume", request.getVolumeId(), observer, () -> {
            String volumeId = RequestFields.volumeId(request.getVolumeId());
            String target = RequestFields.path("target_path", request.getTargetPath());
            VolumeCapability capability = CapabilityTranslator.required(request.hasVolumeCapability(), request.getVolumeCapability());
            // Required because this plugin advertises STAGE_UNSTAGE_VOLUME.
            String staging = RequestFields.path("staging_target_path", request.getStagingTargetPath());
            // Not used on publish, but bounded and checked like stage's: the same rules for every request.
            RequestFields.context("volume_context", request.getVolumeContextMap());
            RequestFields.context("publish_context", request.getPublishContextMap());
            RequestFields.secrets("secrets", request.getSecretsMap());
            volumes.publish(new Requests.Publish(volumeId, staging, target, capability, request.getReadonly()));
            return NodePublishVolumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void nodeUnpublishVolume(NodeUnpublishVolumeRequest request,
                                    StreamObserver<NodeUnpublishVolumeResponse> observer) {
        RpcCall.answer("NodeUnpublishVolume", request.getVolumeId(), observer, () -> {
            String volumeId = RequestFields.volumeId(request.getVolumeId());
            String target = RequestFields.path("target_path", request.getTargetPath());
            volumes.unpublish(new Requests.Unpublish(volumeId, target));
            return NodeUnpublishVolumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void nodeGetVolumeStats(NodeGetVolumeStatsRequest request,
                                   StreamObserver<NodeGetVolumeStatsResponse> observer) {
        RpcCall.answer("NodeGetVolumeStats", request.getVolumeId(), observer, () -> {
            String volumeId = RequestFields.volumeId(request.getVolumeId());
            String path = RequestFields.path("volume_path", request.getVolumePath());
            String staging = RequestFields.optionalPath("staging_target_path", request.getStagingTargetPath());
            VolumeStats stats = volumes.stats(new Requests.Stats(volumeId, path, staging));
            return statsResponse(stats);
        });
    }

    @Override
    public void nodeExpandVolume(NodeExpandVolumeRequest request, StreamObserver<NodeExpandVolumeResponse> observer) {
        RpcCall.answer("NodeExpandVolume", request.getVolumeId(), observer, () -> {
            String volumeId = RequestFields.volumeId(request.getVolumeId());
            String path = RequestFields.path("volume_path", request.getVolumePath());
            long required = request.getCapacityRange().getRequiredBytes();
            long limit = request.getCapacityRange().getLimitBytes();
            if (required < 0 || limit < 0) {
                throw VolumeException.invalid("capacity_range bytes must not be negative");
            }
            if (limit > 0 && required > limit) {
                throw VolumeException.invalid("capacity_range.required_bytes " + required
                        + " exceeds capacity_range.limit_bytes " + limit);
            }
            Optional<VolumeCapability> capability = request.hasVolumeCapability()
                    ? Optional.of(CapabilityTranslator.translate("volume_capability", request.getVolumeCapability()))
                    : Optional.empty();
            String staging = RequestFields.optionalPath("staging_target_path", request.getStagingTargetPath());
            var secrets = new Secrets(RequestFields.secrets("secrets", request.getSecretsMap()));
            long capacity = volumes.expand(new Requests.Expand(volumeId, path, staging, required, limit, capability,
                    secrets));
            return NodeExpandVolumeResponse.newBuilder().setCapacityBytes(capacity).build();
        });
    }

    @Override
    public void nodeGetVolumeHealth(NodeGetVolumeHealthRequest request,
                                    StreamObserver<NodeGetVolumeHealthResponse> observer) {
        RpcCall.answer("NodeGetVolumeHealth", request.getVolumeId(), observer, () -> {
            String volumeId = RequestFields.volumeId(request.getVolumeId());
            String publish = RequestFields.optionalPath("volume_publish_path", request.getVolumePublishPath());
            String staging = RequestFields.optionalPath("staging_target_path", request.getStagingTargetPath());
            List<HealthProblem> problems = volumes.health(new Requests.Health(volumeId, publish, staging));
            return NodeGetVolumeHealthResponse.newBuilder()
                    .setVolumeHealth(HealthTranslator.volumeHealth(volumeId, problems))
                    .build();
        });
    }

    @Override
    public void nodeGetStorageHealth(NodeGetStorageHealthRequest request,
                                     StreamObserver<NodeGetStorageHealthResponse> observer) {
        RpcCall.answer("NodeGetStorageHealth", observer, () -> {
            // Not used (the storage is read through sysfs), but bounded and checked like every request's secrets.
            RequestFields.secrets("secrets", request.getSecretsMap());
            return HealthTranslator.storageHealth(volumes.storageHealth());
        });
    }

    @Override
    public void nodeGetCapabilities(NodeGetCapabilitiesRequest request,
                                    StreamObserver<NodeGetCapabilitiesResponse> observer) {
        RpcCall.answer("NodeGetCapabilities", observer, () -> {
            NodeGetCapabilitiesResponse.Builder response = NodeGetCapabilitiesResponse.newBuilder();
            for (NodeServiceCapability.RPC.Type type : CAPABILITIES) {
                response.addCapabilities(NodeServiceCapability.newBuilder()
                        .setRpc(NodeServiceCapability.RPC.newBuilder().setType(type)));
            }
            return response.build();
        });
    }

    @Override
    public void nodeGetInfo(NodeGetInfoRequest request, StreamObserver<NodeGetInfoResponse> observer) {
        RpcCall.answer("NodeGetInfo", observer, () -> {
            // Read again at every call: kubelet calls again every nodeAllocatableUpdatePeriodSeconds of the
            // CSIDriver, and at once after a RESOURCE_EXHAUSTED stage, to move CSINode's allocatable count.
            NodeGetInfoResponse.Builder response = NodeGetInfoResponse.newBuilder()
                    .setNodeId(nodeId)
                    .setMaxVolumesPerNode(volumes.limit().reported());
            if (!topology.isEmpty()) {
                response.setAccessibleTopology(Topology.newBuilder().putAllSegments(topology));
            }
            return response.build();
        });
    }

    private static NodeGetVolumeStatsResponse statsResponse(VolumeStats stats) {
        NodeGetVolumeStatsResponse.Builder response = NodeGetVolumeStatsResponse.newBuilder();
        VolumeUsage.Builder bytes = VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.BYTES)
                .setTotal(stats.totalBytes());
        stats.availableBytes().ifPresent(bytes::setAvailable);
        stats.usedBytes().ifPresent(bytes::setUsed);
        response.addUsage(bytes);
        if (stats.totalInodes().isPresent()) {
            VolumeUsage.Builder inodes = VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.INODES)
                    .setTotal(stats.totalInodes().getAsLong());
            stats.availableInodes().ifPresent(inodes::setAvailable);
            stats.usedInodes().ifPresent(inodes::setUsed);
            response.addUsage(inodes);
        }
        response.setVolumeCondition(VolumeCondition.newBuilder()
                .setAbnormal(stats.abnormal())
                .setMessage(stats.abnormal() ? stats.condition() : "volume is healthy"));
        return response.build();
    }
}
