package dev.blocknode.csi;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.server.LoggingInterceptor;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.csi.v1.GetPluginCapabilitiesRequest;
import dev.blocknode.csi.v1.GetPluginInfoRequest;
import dev.blocknode.csi.v1.GetPluginInfoResponse;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGetCapabilitiesRequest;
import dev.blocknode.csi.v1.NodeGetInfoRequest;
import dev.blocknode.csi.v1.NodeServiceCapability;
import dev.blocknode.csi.v1.PluginCapability;
import dev.blocknode.csi.v1.ProbeRequest;
import dev.blocknode.csi.v1.ProbeResponse;
import dev.blocknode.testing.PluginHarness;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The socket's life (stale files, live neighbours, permissions) and the Identity and info calls. */
@Tag("host")
class ServerHostTest {

    @Test
    void identityAndNodeInfoAnswer() throws Exception {
        try (PluginHarness plugin = PluginHarness.start()) {
            GetPluginInfoResponse info = plugin.client().identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
            assertEquals(PluginHarness.DRIVER, info.getName());
            assertFalse(info.getVendorVersion().isEmpty());
            assertEquals("v1", info.getManifestOrThrow("contract.blocknode.dev"), "docs/integration.md's version");
            assertTrue(plugin.client().identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue());
            List<PluginCapability> pluginCaps = plugin.client().identity()
                    .getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();
            assertTrue(pluginCaps.stream().noneMatch(c -> c.getService().getType()
                    == PluginCapability.Service.Type.CONTROLLER_SERVICE), "a node plugin serves no controller");
            Set<NodeServiceCapability.RPC.Type> caps = plugin.client().node()
                    .nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList().stream()
                    .map(c -> c.getRpc().getType()).collect(Collectors.toSet());
            assertEquals(Set.of(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
                    NodeServiceCapability.RPC.Type.GET_VOLUME_STATS, NodeServiceCapability.RPC.Type.EXPAND_VOLUME,
                    NodeServiceCapability.RPC.Type.VOLUME_CONDITION,
                    NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER,
                    NodeServiceCapability.RPC.Type.GET_VOLUME_HEALTH,
                    NodeServiceCapability.RPC.Type.GET_STORAGE_HEALTH), caps);
            assertEquals(PluginHarness.NODE_ID, plugin.client().node()
                    .nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()).getNodeId());
            Path socket = plugin.plugin().server().socket();
            assertEquals("rw-rw----", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
        }
    }

    @Test
    void aStaleSocketFileIsReplacedAndRemovedOnShutdown(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("csi.sock");
        // A socket file whose server is gone: bind, then close without unlinking.
        try (ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            dead.bind(UnixDomainSocketAddress.of(socket));
        }
        assertTrue(Files.exists(socket));
        UnixSocketServer server = UnixSocketServer.start(socket, PosixFilePermissions.fromString("rw-------"),
                Optional.empty(), List.of(), List.of());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
        server.shutdown(Duration.ofSeconds(2));
        assertFalse(Files.exists(socket), "the socket file is removed on shutdown");
    }

    @Test
    void aLiveServerIsNeverStolenFrom(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("csi.sock");
        try (ServerSocketChannel live = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            live.bind(UnixDomainSocketAddress.of(socket));
            IOException refused = assertThrows(IOException.class, () -> UnixSocketServer.start(socket,
                    PosixFilePermissions.fromString("rw-rw----"), Optional.empty(), List.of(), List.of()));
            assertTrue(refused.getMessage().contains("already listening"), refused.getMessage());
            assertTrue(Files.exists(socket), "the live server's socket is untouched");
        }
    }

    /**
     * gRPC's steps run on the single event loop and each method on a thread of its own: a method that blocks
     * must not hold up another call, and it must see its call's Context (the request id the logs carry).
     */
    @Test
    void aBlockedMethodHoldsUpNoOtherCall(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("csi.sock");
        CountDownLatch probeEntered = new CountDownLatch(1);
        CountDownLatch releaseProbe = new CountDownLatch(1);
        AtomicReference<Long> probeRequestId = new AtomicReference<>();
        IdentityGrpc.IdentityImplBase service = new IdentityGrpc.IdentityImplBase() {
            @Override
            public void probe(ProbeRequest request, StreamObserver<ProbeResponse> observer) {
                probeRequestId.set(LoggingInterceptor.REQUEST_ID.get());
                probeEntered.countDown();
                try {
                    releaseProbe.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                observer.onNext(ProbeResponse.getDefaultInstance());
                observer.onCompleted();
            }

            @Override
            public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
                observer.onNext(GetPluginInfoResponse.newBuilder().setName("answered").build());
                observer.onCompleted();
            }
        };
        UnixSocketServer server = UnixSocketServer.start(socket, PosixFilePermissions.fromString("rw-------"),
                Optional.empty(), List.of(service), List.of(new LoggingInterceptor()));
        try (CsiClient client = new CsiClient(socket)) {
            CompletableFuture<ProbeResponse> probe = CompletableFuture.supplyAsync(
                    () -> client.identity().probe(ProbeRequest.getDefaultInstance()));
            assertTrue(probeEntered.await(10, TimeUnit.SECONDS), "Probe reached its method");
            assertEquals("answered", client.identity().withDeadlineAfter(10, TimeUnit.SECONDS)
                    .getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
            assertFalse(probe.isDone(), "Probe is still blocked in its method");
            releaseProbe.countDown();
            probe.get(10, TimeUnit.SECONDS);
            assertNotNull(probeRequestId.get(), "the method saw its call's Context");
        } finally {
            releaseProbe.countDown();
            server.shutdown(Duration.ofSeconds(2));
        }
    }

    /**
     * A handler that throws an Error rather than an exception (a LinkageError from a mismatched class, an
     * AssertionError) still answers its caller, on a call thread and on the event loop alike: uncaught, the
     * call would never be closed and its caller would wait out its deadline.
     */
    @Test
    void aHandlerThatThrowsAnErrorStillAnswers(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("csi.sock");
        IdentityGrpc.IdentityImplBase service = new IdentityGrpc.IdentityImplBase() {
            @Override
            public void probe(ProbeRequest request, StreamObserver<ProbeResponse> observer) {
                throw new NoSuchMethodError("thrown by the test's Probe");
            }

            @Override
            public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
                throw new AssertionError("thrown by the test's GetPluginInfo");
            }
        };
        UnixSocketServer server = UnixSocketServer.start(socket, PosixFilePermissions.fromString("rw-------"),
                Optional.empty(), List.of(service), List.of(new LoggingInterceptor()),
                Set.of(IdentityGrpc.getGetPluginInfoMethod().getFullMethodName()));
        try (CsiClient client = new CsiClient(socket)) {
            for (int i = 0; i < 3; i++) { // and again: the call threads are still there to serve
                StatusRuntimeException probe = assertThrows(StatusRuntimeException.class, () -> client.identity()
                        .withDeadlineAfter(10, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance()));
                assertEquals(Status.Code.UNKNOWN, probe.getStatus().getCode(), probe.toString());
                StatusRuntimeException info = assertThrows(StatusRuntimeException.class, () -> client.identity()
                        .withDeadlineAfter(10, TimeUnit.SECONDS).getPluginInfo(GetPluginInfoRequest.getDefaultInstance()));
                assertEquals(Status.Code.UNKNOWN, info.getStatus().getCode(), info.toString());
            }
        } finally {
            server.shutdown(Duration.ofSeconds(2));
        }
    }

    /**
     * A method named as answered from memory runs on the event loop itself (no thread wake-up), with its call's
     * Context; every other method still hops to a call thread, so a blocked one never stalls the loop.
     */
    @Test
    void methodsAnsweredFromMemoryStayOnTheEventLoopAndOthersHop(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("csi.sock");
        AtomicReference<Thread> infoThread = new AtomicReference<>();
        AtomicReference<Thread> probeThread = new AtomicReference<>();
        AtomicReference<Long> infoRequestId = new AtomicReference<>();
        IdentityGrpc.IdentityImplBase service = new IdentityGrpc.IdentityImplBase() {
            @Override
            public void probe(ProbeRequest request, StreamObserver<ProbeResponse> observer) {
                probeThread.set(Thread.currentThread());
                observer.onNext(ProbeResponse.getDefaultInstance());
                observer.onCompleted();
            }

            @Override
            public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
                infoThread.set(Thread.currentThread());
                infoRequestId.set(LoggingInterceptor.REQUEST_ID.get());
                observer.onNext(GetPluginInfoResponse.newBuilder().setName("answered").build());
                observer.onCompleted();
            }
        };
        UnixSocketServer server = UnixSocketServer.start(socket, PosixFilePermissions.fromString("rw-------"),
                Optional.empty(), List.of(service), List.of(new LoggingInterceptor()),
                Set.of(IdentityGrpc.getGetPluginInfoMethod().getFullMethodName()));
        try (CsiClient client = new CsiClient(socket)) {
            assertEquals("answered", client.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance())
                    .getName());
            client.identity().probe(ProbeRequest.getDefaultInstance());
        } finally {
            server.shutdown(Duration.ofSeconds(2));
        }
        assertFalse(infoThread.get().getName().startsWith("csi-call-"), "GetPluginInfo ran on " + infoThread.get());
        assertTrue(probeThread.get().getName().startsWith("csi-call-"), "Probe ran on " + probeThread.get());
        assertNotNull(infoRequestId.get(), "the inline method saw its call's Context");
    }

    @Test
    void theNodeAndIdentityMethodsAnsweredFromMemoryAreOnlyTheMemoryOnes() {
        // Adding a method here means proving it never waits on a disk, a device, a lock or a command.
        assertEquals(Set.of("csi.v1.Identity/GetPluginInfo", "csi.v1.Identity/GetPluginCapabilities",
                        "csi.v1.Identity/Probe"),
                IdentityService.ANSWERED_FROM_MEMORY);
        assertEquals(Set.of("csi.v1.Node/NodeGetCapabilities"),
                NodeService.ANSWERED_FROM_MEMORY);
        assertEquals(Set.of("csi.v1.Controller/ControllerGetCapabilities"), ControllerService.ANSWERED_FROM_MEMORY);
    }
}
