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
import dev.blocknode.volume.VolumeException;
import io.grpc.stub.StreamObserver;

import java.util.List;
import java.util.function.Supplier;

/**
 * The CSI Identity service: who we are, what we can do, and whether we are healthy. Probe is called by
 * livenessprobe every few seconds, so its checks are cheap and it says exactly what is wrong.
 */
public final class IdentityService extends IdentityGrpc.IdentityImplBase {

    private final String driverName;
    private final String version;
    private final Supplier<List<String>> healthProblems;

    /** @param healthProblems what keeps the plugin from serving volumes now; empty when healthy */
    public IdentityService(String driverName, String version, Supplier<List<String>> healthProblems) {
        this.driverName = driverName;
        this.version = version;
        this.healthProblems = healthProblems;
    }

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
        RpcCall.answer("GetPluginInfo", observer, () -> GetPluginInfoResponse.newBuilder()
                .setName(driverName)
                .setVendorVersion(version)
                .build());
    }

    @Override
    public void getPluginCapabilities(GetPluginCapabilitiesRequest request,
                                      StreamObserver<GetPluginCapabilitiesResponse> observer) {
        // Node-only plugin: no CONTROLLER_SERVICE. Filesystems grow while mounted: ONLINE expansion.
        RpcCall.answer("GetPluginCapabilities", observer, () -> GetPluginCapabilitiesResponse.newBuilder()
                .addCapabilities(PluginCapability.newBuilder().setVolumeExpansion(
                        PluginCapability.VolumeExpansion.newBuilder()
                                .setType(PluginCapability.VolumeExpansion.Type.ONLINE)))
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
