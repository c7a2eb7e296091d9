package dev.blocknode.csi;

import com.google.protobuf.BoolValue;
import dev.blocknode.csi.v1.GetPluginCapabilitiesRequest;
import dev.blocknode.csi.v1.GetPluginCapabilitiesResponse;
import dev.blocknode.csi.v1.GetPluginInfoRequest;
import dev.blocknode.csi.v1.GetPluginInfoResponse;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.PluginCapability;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.ProbeResponse;
import dev.blocknode.outcome.VolumeException;
import io.grpc.stub.StreamObserver;

import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The CSI Identity service: who we are, what we can do, and whether we are healthy. Probe is called by
 * livenessprobe every few seconds, so its checks are cheap and it says exactly what is wrong.
 */
public final class IdentityService extends IdentityGrpc.IdentityImplBase {

    /**
     * What the node plugin claims: no CONTROLLER_SERVICE (it is node-only), and ONLINE expansion
     * (filesystems grow while mounted).
     */
    public static final List<PluginCapability> NODE_PLUGIN = List.of(PluginCapability.newBuilder()
            .setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
                    .setType(PluginCapability.VolumeExpansion.Type.ONLINE))
            .build());

    /**
     * The node plugin's claims with {@code --topology}: VOLUME_ACCESSIBILITY_CONSTRAINTS as well, because the spec
     * says a plugin whose NodeGetInfo returns accessible_topology MUST set it. kubelet does not ask (it labels the
     * node from NodeGetInfo alone), and no provisioner talks to this node-only plugin, so it changes nothing in
     * Kubernetes; it is there so that what the plugin claims and what it reports agree. Without topology it stays
     * off: every node then reaches every volume as far as the CO can tell, which is what no topology means.
     */
    public static List<PluginCapability> nodePlugin(boolean reportsTopology) {
        if (!reportsTopology) {
            return NODE_PLUGIN;
        }
        return java.util.stream.Stream.concat(NODE_PLUGIN.stream(), java.util.stream.Stream.of(
                PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
                        .setType(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS)).build())).toList();
    }

    /**
     * What the controller side ({@code --mode controller}) claims: CONTROLLER_SERVICE, so that the
     * external-attacher and kubelet treat the driver as attachable (see ControllerService).
     */
    public static final List<PluginCapability> CONTROLLER_PLUGIN = List.of(PluginCapability.newBuilder()
            .setService(PluginCapability.Service.newBuilder()
                    .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE))
            .build());

    /**
     * GetPluginInfo's manifest key naming the version of the contract between blocknode's node side and a
     * controller: the volume_context and publish_context keys, their precedence and the error semantics
     * (docs/integration.md). Bumped only by a change a controller written for the old version could trip on.
     */
    public static final String CONTRACT_KEY = "contract.blocknode.dev";
    public static final String CONTRACT_VERSION = "v1";

    /** The methods answered from memory, which may run on the server's event loop (see UnixSocketServer). */
    public static final Set<String> ANSWERED_FROM_MEMORY = Set.of(
            IdentityGrpc.getGetPluginInfoMethod().getFullMethodName(),
            IdentityGrpc.getGetPluginCapabilitiesMethod().getFullMethodName(),
            IdentityGrpc.getProbeMethod().getFullMethodName());

    private final String driverName;
    private final String version;
    private final List<PluginCapability> capabilities;
    private final Supplier<List<String>> healthProblems;

    /**
     * @param healthProblems what keeps the plugin from serving volumes now, empty when healthy; answered from
     *                       memory (Probe runs on the server's event loop: see ANSWERED_FROM_MEMORY)
     */
    public IdentityService(String driverName, String version, List<PluginCapability> capabilities,
                           Supplier<List<String>> healthProblems) {
        this.driverName = driverName;
        this.version = version;
        this.capabilities = List.copyOf(capabilities);
        this.healthProblems = healthProblems;
    }

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
        RpcCall.answer("GetPluginInfo", observer, () -> GetPluginInfoResponse.newBuilder()
                .setName(driverName)
                .setVendorVersion(version)
                .putManifest(CONTRACT_KEY, CONTRACT_VERSION)
                .build());
    }

    @Override
    public void getPluginCapabilities(GetPluginCapabilitiesRequest request,
                                      StreamObserver<GetPluginCapabilitiesResponse> observer) {
        RpcCall.answer("GetPluginCapabilities", observer, () -> GetPluginCapabilitiesResponse.newBuilder()
                .addAllCapabilities(capabilities)
                .build());
    }

    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> observer) {
        RpcCall.answer("Probe", observer, () -> {
            List<String> problems = healthProblems.get();
            if (!problems.isEmpty()) {
                throw VolumeException.precondition("not healthy: " + String.join("; ", problems));
            }
            return ProbeResponse.newBuilder().setReady(BoolValue.of(true)).build();
        });
    }
}
