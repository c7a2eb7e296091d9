package dev.blocknode.e2e;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.csi.v1.GetPluginCapabilitiesRequest;
import dev.blocknode.csi.v1.GetPluginCapabilitiesResponse;
import dev.blocknode.csi.v1.GetPluginInfoRequest;
import dev.blocknode.csi.v1.GetPluginInfoResponse;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGetCapabilitiesRequest;
import dev.blocknode.csi.v1.PluginCapability;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.ProbeResponse;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The front changes exactly one thing, and passes everything else through as the plugin said it. */
class SanityFrontUnitTest {

    private static final Metadata.Key<String> DETAIL = Metadata.Key.of("x-detail", Metadata.ASCII_STRING_MARSHALLER);

    private static final PluginCapability ONLINE_EXPANSION = PluginCapability.newBuilder()
            .setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
                    .setType(PluginCapability.VolumeExpansion.Type.ONLINE))
            .build();
    private static final PluginCapability CONTROLLER_SERVICE = PluginCapability.newBuilder()
            .setService(PluginCapability.Service.newBuilder()
                    .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE))
            .build();

    /** A stand-in node plugin: node-only, unhealthy, and with no Node service at all. */
    private static final class FakePluginIdentity extends IdentityGrpc.IdentityImplBase {
        final AtomicReference<Deadline> lastDeadline = new AtomicReference<>();

        @Override
        public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
            lastDeadline.set(Context.current().getDeadline());
            observer.onNext(GetPluginInfoResponse.newBuilder().setName("fake.example.com").setVendorVersion("1")
                    .putManifest("k", "v").build());
            observer.onCompleted();
        }

        @Override
        public void getPluginCapabilities(GetPluginCapabilitiesRequest request,
                                          StreamObserver<GetPluginCapabilitiesResponse> observer) {
            observer.onNext(GetPluginCapabilitiesResponse.newBuilder().addCapabilities(ONLINE_EXPANSION).build());
            observer.onCompleted();
        }

        @Override
        public void probe(ProbeRequest request, StreamObserver<ProbeResponse> observer) {
            Metadata trailers = new Metadata();
            trailers.put(DETAIL, "no multipathd");
            observer.onError(Status.FAILED_PRECONDITION.withDescription("not healthy: multipathd is not running")
                    .asRuntimeException(trailers));
        }
    }

    @TempDir
    Path dir;

    private final FakePluginIdentity fake = new FakePluginIdentity();
    private UnixSocketServer plugin;
    private SanityFront front;
    private CsiClient direct;
    private CsiClient viaFront;

    @BeforeEach
    void start() throws IOException {
        plugin = UnixSocketServer.start(dir.resolve("p.sock"), PosixFilePermissions.fromString("rw-------"),
                Optional.empty(), List.of(fake), List.of());
        front = SanityFront.start(dir.resolve("f.sock"), dir.resolve("p.sock"));
        direct = new CsiClient(dir.resolve("p.sock"));
        viaFront = new CsiClient(dir.resolve("f.sock"));
    }

    @AfterEach
    void stop() {
        viaFront.close();
        direct.close();
        front.close();
        plugin.close();
    }

    @Test
    void addsControllerServiceToThePluginsCapabilitiesAndNothingElse() {
        GetPluginCapabilitiesResponse response = viaFront.identity()
                .getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance());

        assertEquals(List.of(ONLINE_EXPANSION, CONTROLLER_SERVICE), response.getCapabilitiesList());
    }

    @Test
    void addsNothingWhenThePluginAlreadyClaimsIt() {
        GetPluginCapabilitiesResponse claimed = GetPluginCapabilitiesResponse.newBuilder()
                .addCapabilities(CONTROLLER_SERVICE).addCapabilities(ONLINE_EXPANSION).build();

        assertEquals(claimed, parse(SanityFront.addControllerService(claimed.toByteArray())));
    }

    @Test
    void forwardsAnswersUnchanged() {
        assertEquals(direct.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()),
                viaFront.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()));
    }

    @Test
    void passesTheCallersDeadlineOn() {
        viaFront.identity().withDeadlineAfter(1, TimeUnit.MINUTES)
                .getPluginInfo(GetPluginInfoRequest.getDefaultInstance());

        Deadline seen = fake.lastDeadline.get();
        assertNotNull(seen, "the plugin saw no deadline");
        long left = seen.timeRemaining(TimeUnit.SECONDS);
        assertTrue(left > 50 && left <= 60, left + " s left");
    }

    @Test
    void forwardsErrorsWithTheirCodeDescriptionAndTrailers() {
        StatusRuntimeException expected = failure(() -> direct.identity().probe(ProbeRequest.getDefaultInstance()));
        StatusRuntimeException actual = failure(() -> viaFront.identity().probe(ProbeRequest.getDefaultInstance()));

        assertEquals(Status.Code.FAILED_PRECONDITION, actual.getStatus().getCode());
        assertEquals(expected.getStatus().getDescription(), actual.getStatus().getDescription());
        assertEquals("no multipathd", actual.getTrailers().get(DETAIL));
    }

    @Test
    void forwardsMethodsItHasNeverHeardOfToo() {
        StatusRuntimeException expected = failure(() -> direct.node()
                .nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()));
        StatusRuntimeException actual = failure(() -> viaFront.node()
                .nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()));

        assertEquals(Status.Code.UNIMPLEMENTED, actual.getStatus().getCode());
        assertEquals(expected.getStatus().getDescription(), actual.getStatus().getDescription());
    }

    @Test
    void addsNodeExpandSecretsOnlyToARequestWithoutAny() throws Exception {
        NodeExpandVolumeRequest bare = NodeExpandVolumeRequest.newBuilder().setVolumeId("v").setVolumePath("/p").build();
        NodeExpandVolumeRequest own = bare.toBuilder().putSecrets("mine", "x").build();
        Map<String, String> secrets = Map.of("encryptionPassphrase", "k");

        assertEquals(bare.toBuilder().putAllSecrets(secrets).build(),
                NodeExpandVolumeRequest.parseFrom(SanityFront.addNodeExpandSecrets(bare.toByteArray(), secrets)));
        assertArrayEquals(own.toByteArray(), SanityFront.addNodeExpandSecrets(own.toByteArray(), secrets),
                "the caller's own secrets are the plugin's to judge");
        assertArrayEquals(bare.toByteArray(), SanityFront.addNodeExpandSecrets(bare.toByteArray(), Map.of()));
    }

    @Test
    void reportsAnAbsentPluginAsUnavailable() {
        plugin.close();

        StatusRuntimeException e = failure(() -> viaFront.identity().probe(ProbeRequest.getDefaultInstance()));

        assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    }

    private static StatusRuntimeException failure(Executable call) {
        return assertThrows(StatusRuntimeException.class, call);
    }

    private static GetPluginCapabilitiesResponse parse(byte[] bytes) {
        try {
            return GetPluginCapabilitiesResponse.parseFrom(bytes);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
