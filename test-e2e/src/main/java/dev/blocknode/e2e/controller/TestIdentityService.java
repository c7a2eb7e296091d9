package dev.blocknode.e2e.controller;

import com.google.protobuf.BoolValue;
import dev.blocknode.csi.v1.GetPluginCapabilitiesRequest;
import dev.blocknode.csi.v1.GetPluginCapabilitiesResponse;
import dev.blocknode.csi.v1.GetPluginInfoRequest;
import dev.blocknode.csi.v1.GetPluginInfoResponse;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.PluginCapability;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.ProbeResponse;
import io.grpc.stub.StreamObserver;

/**
 * Identity of the test controller: it provides the CONTROLLER_SERVICE and grows volumes online. It has
 * no dependencies, so it is always ready.
 */
public final class TestIdentityService extends IdentityGrpc.IdentityImplBase {

    private final String driverName;
    private final String version;

    public TestIdentityService(String driverName, String version) {
        this.driverName = driverName;
        this.version = version;
    }

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
        TestControllerService.answer("GetPluginInfo", observer, () -> GetPluginInfoResponse.newBuilder()
                .setName(driverName)
                .setVendorVersion(version)
                .build());
    }

    @Override
    public void getPluginCapabilities(GetPluginCapabilitiesRequest request,
                                      StreamObserver<GetPluginCapabilitiesResponse> observer) {
        TestControllerService.answer("GetPluginCapabilities", observer, () -> GetPluginCapabilitiesResponse.newBuilder()
                .addCapabilities(PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
                        .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE)))
                .addCapabilities(PluginCapability.newBuilder().setVolumeExpansion(
                        PluginCapability.VolumeExpansion.newBuilder()
                                .setType(PluginCapability.VolumeExpansion.Type.ONLINE)))
                .build());
    }

    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> observer) {
        TestControllerService.answer("Probe", observer, () -> ProbeResponse.newBuilder()
                .setReady(BoolValue.of(true))
                .build());
    }
}
