package dev.blocknode.csi;

import dev.blocknode.csi.v1.ControllerGetCapabilitiesRequest;
import dev.blocknode.csi.v1.ControllerGetCapabilitiesResponse;
import dev.blocknode.csi.v1.ControllerGrpc;
import dev.blocknode.csi.v1.ControllerPublishVolumeRequest;
import dev.blocknode.csi.v1.ControllerPublishVolumeResponse;
import dev.blocknode.csi.v1.ControllerServiceCapability;
import dev.blocknode.csi.v1.ControllerUnpublishVolumeRequest;
import dev.blocknode.csi.v1.ControllerUnpublishVolumeResponse;
import dev.blocknode.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.blocknode.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.blocknode.outcome.VolumeException;
import io.grpc.stub.StreamObserver;

import java.util.Set;

/**
 * The CSI Controller service of {@code --mode controller}: ControllerPublishVolume and ControllerUnpublishVolume
 * only, and both touch no storage. A volume's address (portals, WWNs, NQN) is in its PV already, and every node
 * that has the volume's address can reach it; what publishing buys is that Kubernetes then keeps a
 * VolumeAttachment per node, and its attach/detach controller refuses to attach a ReadWriteOnce volume to a
 * second node while the first holds it. So publish checks the request as the spec asks and answers an empty
 * publish_context; both are idempotent because they change nothing. ValidateVolumeCapabilities, which the spec
 * asks of every controller, answers with the same check. Every capability is checked by CapabilityTranslator, the
 * node's own validator, so the controller accepts exactly what NodeStageVolume would. Every other Controller RPC
 * is UNIMPLEMENTED, as the capabilities say (volumes are created by the storage's own provisioner).
 */
public final class ControllerService extends ControllerGrpc.ControllerImplBase {

    private static final ControllerGetCapabilitiesResponse CAPABILITIES = ControllerGetCapabilitiesResponse
            .newBuilder()
            .addCapabilities(ControllerServiceCapability.newBuilder().setRpc(ControllerServiceCapability.RPC
                    .newBuilder().setType(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME)))
            .build();

    /** The methods answered from memory, which may run on the server's event loop (see UnixSocketServer). */
    public static final Set<String> ANSWERED_FROM_MEMORY = Set.of(
            ControllerGrpc.getControllerGetCapabilitiesMethod().getFullMethodName());

    @Override
    public void controllerGetCapabilities(ControllerGetCapabilitiesRequest request,
                                          StreamObserver<ControllerGetCapabilitiesResponse> observer) {
        RpcCall.answer("ControllerGetCapabilities", observer, () -> CAPABILITIES);
    }

    @Override
    public void controllerPublishVolume(ControllerPublishVolumeRequest request,
                                        StreamObserver<ControllerPublishVolumeResponse> observer) {
        RpcCall.answer("ControllerPublishVolume", request.getVolumeId(), observer, () -> {
            RequestFields.volumeId(request.getVolumeId());
            RequestFields.nodeId(request.getNodeId());
            // The node applies the capability at NodeStageVolume; here it is only checked, with the same rules,
            // so that a capability the node would refuse is refused before anything is attached.
            CapabilityTranslator.required(request.hasVolumeCapability(), request.getVolumeCapability());
            RequestFields.context("volume_context", request.getVolumeContextMap());
            RequestFields.secrets("secrets", request.getSecretsMap());
            return ControllerPublishVolumeResponse.getDefaultInstance();
        });
    }

    /**
     * The capabilities checked as ControllerPublishVolume and NodeStageVolume check them: all of them acceptable,
     * and they are confirmed (echoed with the context and parameters); one the node would refuse is
     * INVALID_ARGUMENT naming it, as it would be at the node. The volume's existence cannot be checked here (this
     * side has no access to the storage), so it is taken to exist.
     */
    @Override
    public void validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest request,
                                           StreamObserver<ValidateVolumeCapabilitiesResponse> observer) {
        RpcCall.answer("ValidateVolumeCapabilities", request.getVolumeId(), observer, () -> {
            RequestFields.volumeId(request.getVolumeId());
            if (request.getVolumeCapabilitiesCount() == 0) {
                throw VolumeException.invalid("volume_capabilities is required");
            }
            for (int i = 0; i < request.getVolumeCapabilitiesCount(); i++) {
                CapabilityTranslator.translate("volume_capabilities[" + i + "]", request.getVolumeCapabilities(i));
            }
            RequestFields.context("volume_context", request.getVolumeContextMap());
            RequestFields.context("parameters", request.getParametersMap());
            RequestFields.context("mutable_parameters", request.getMutableParametersMap());
            RequestFields.secrets("secrets", request.getSecretsMap());
            return ValidateVolumeCapabilitiesResponse.newBuilder()
                    .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                            .putAllVolumeContext(request.getVolumeContextMap())
                            .addAllVolumeCapabilities(request.getVolumeCapabilitiesList())
                            .putAllParameters(request.getParametersMap())
                            .putAllMutableParameters(request.getMutableParametersMap()))
                    .build();
        });
    }

    @Override
    public void controllerUnpublishVolume(ControllerUnpublishVolumeRequest request,
                                          StreamObserver<ControllerUnpublishVolumeResponse> observer) {
        RpcCall.answer("ControllerUnpublishVolume", request.getVolumeId(), observer, () -> {
            RequestFields.volumeId(request.getVolumeId());
            // An empty node_id means "from every node" in the spec: nothing is held anywhere either way.
            if (!request.getNodeId().isEmpty()) {
                RequestFields.nodeId(request.getNodeId());
            }
            RequestFields.secrets("secrets", request.getSecretsMap());
            return ControllerUnpublishVolumeResponse.getDefaultInstance();
        });
    }
}
