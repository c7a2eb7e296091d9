package dev.blocknode.e2e;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.blocknode.csi.client.UnixSocketChannels;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.csi.v1.GetPluginCapabilitiesResponse;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeExpandVolumeRequest;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.csi.v1.PluginCapability;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.HandlerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The sanity front: a transparent gRPC proxy on its own Unix socket in front of the node plugin's socket,
 * for csi-sanity only.
 *
 * <p>Why it exists: csi-sanity decides whether to run its Node Service lifecycle tests ("should work",
 * "should be idempotent", node expansion after publish, target path removal, stats on a published volume)
 * by asking the <em>node</em> endpoint's Identity.GetPluginCapabilities for CONTROLLER_SERVICE
 * (sanity/node.go, BeforeEach), even when a separate controller endpoint is given. blocknode is node-only
 * and, in production, must not claim a controller service it does not have; without the claim those
 * tests skip. So csi-sanity talks to this front, which adds CONTROLLER_SERVICE to that one answer, while
 * {@code --csi.controllerendpoint} points at the test controller that really provides the service.
 *
 * <p>It may also fill one gap of csi-sanity's on the way in: csi-sanity has no setting for NodeExpandVolume's
 * secrets (its secrets file has none for that call), which kubelet sends from a StorageClass's node-expand
 * secret and which an encrypted volume needs (the passphrase, to grow its dm-crypt mapping). Started with
 * {@code nodeExpandSecrets}, the front adds them to a NodeExpandVolume request that carries none, as kubelet
 * would; a request with secrets of its own is forwarded as it is.
 *
 * <p>Every other call, and every other part of that answer, is forwarded byte for byte: a fallback handler
 * with a byte[] marshaller relays messages, headers, status codes, descriptions and trailers exactly as
 * the plugin sent them, and carries the caller's deadline and cancellation through. So every verdict
 * csi-sanity reaches about the Node and Identity services is a verdict about the plugin itself.
 */
public final class SanityFront implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(SanityFront.class.getName());

    static final String GET_PLUGIN_CAPABILITIES = IdentityGrpc.getGetPluginCapabilitiesMethod().getFullMethodName();
    static final String NODE_EXPAND_VOLUME = NodeGrpc.getNodeExpandVolumeMethod().getFullMethodName();

    /** Messages pass through as their serialized bytes, never parsed (except the one rewritten answer). */
    static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    private final UnixSocketServer server;
    private final ManagedChannel plugin;
    private final EventLoopGroup eventLoops;

    private SanityFront(UnixSocketServer server, ManagedChannel plugin, EventLoopGroup eventLoops) {
        this.server = server;
        this.plugin = plugin;
        this.eventLoops = eventLoops;
    }

    /** Listens on {@code socket} and forwards to the plugin at {@code pluginSocket} (which may start later). */
    public static SanityFront start(Path socket, Path pluginSocket) throws IOException {
        return start(socket, pluginSocket, Map.of());
    }

    /** The same, adding {@code nodeExpandSecrets} to each NodeExpandVolume request that has no secrets. */
    public static SanityFront start(Path socket, Path pluginSocket, Map<String, String> nodeExpandSecrets)
            throws IOException {
        EventLoopGroup eventLoops = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        ManagedChannel plugin = UnixSocketChannels.connect(pluginSocket, eventLoops);
        UnixSocketServer server;
        try {
            server = UnixSocketServer.start(socket, PosixFilePermissions.fromString("rw-rw----"), Optional.empty(),
                    List.of(), List.of(), Optional.of(new ForwardingRegistry(plugin, Map.copyOf(nodeExpandSecrets))));
        } catch (IOException | RuntimeException e) {
            plugin.shutdownNow();
            eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException("sanity front cannot listen on " + socket + ": " + e.getMessage(), e);
        }
        LOG.info(() -> "sanity front on unix://" + socket + " forwarding to unix://" + pluginSocket);
        return new SanityFront(server, plugin, eventLoops);
    }

    @Override
    public void close() {
        try {
            server.shutdown(Duration.ofSeconds(5));
        } finally {
            plugin.shutdownNow();
            eventLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** The one change the front makes: CONTROLLER_SERVICE added to GetPluginCapabilities' answer. */
    static byte[] addControllerService(byte[] response) {
        GetPluginCapabilitiesResponse parsed;
        try {
            parsed = GetPluginCapabilitiesResponse.parseFrom(response);
        } catch (InvalidProtocolBufferException e) {
            // Let csi-sanity judge what the plugin really sent.
            LOG.log(Level.WARNING, "plugin sent an unparseable GetPluginCapabilitiesResponse; forwarding it as is", e);
            return response;
        }
        boolean present = parsed.getCapabilitiesList().stream().anyMatch(c -> c.hasService()
                && c.getService().getType() == PluginCapability.Service.Type.CONTROLLER_SERVICE);
        if (present) {
            return response;
        }
        return parsed.toBuilder()
                .addCapabilities(PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
                        .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE)))
                .build()
                .toByteArray();
    }

    /**
     * NodeExpandVolume's request with {@code secrets} added when it carries none (kubelet's node-expand secret);
     * one that has secrets, or cannot be parsed, goes on as it is (the plugin judges what the caller sent).
     */
    static byte[] addNodeExpandSecrets(byte[] request, Map<String, String> secrets) {
        if (secrets.isEmpty()) {
            return request;
        }
        NodeExpandVolumeRequest parsed;
        try {
            parsed = NodeExpandVolumeRequest.parseFrom(request);
        } catch (InvalidProtocolBufferException e) {
            return request;
        }
        if (parsed.getSecretsCount() > 0) {
            return request;
        }
        return parsed.toBuilder().putAllSecrets(secrets).build().toByteArray();
    }

    /** Answers every method name, known or not, with a forwarding handler. */
    private static final class ForwardingRegistry extends HandlerRegistry {
        private final ManagedChannel plugin;
        private final Map<String, String> nodeExpandSecrets;

        ForwardingRegistry(ManagedChannel plugin, Map<String, String> nodeExpandSecrets) {
            this.plugin = plugin;
            this.nodeExpandSecrets = nodeExpandSecrets;
        }

        @Override
        public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
            MethodDescriptor<byte[], byte[]> method = MethodDescriptor.newBuilder(BYTES, BYTES)
                    .setType(MethodDescriptor.MethodType.UNKNOWN)
                    .setFullMethodName(methodName)
                    .build();
            UnaryOperator<byte[]> rewrite = methodName.equals(GET_PLUGIN_CAPABILITIES)
                    ? SanityFront::addControllerService : UnaryOperator.identity();
            UnaryOperator<byte[]> requestRewrite = methodName.equals(NODE_EXPAND_VOLUME)
                    ? r -> addNodeExpandSecrets(r, nodeExpandSecrets) : UnaryOperator.identity();
            return ServerMethodDefinition.create(method, new ForwardingHandler(plugin, requestRewrite, rewrite));
        }
    }

    private static final class ForwardingHandler implements ServerCallHandler<byte[], byte[]> {
        private final ManagedChannel plugin;
        private final UnaryOperator<byte[]> requestRewrite;
        private final UnaryOperator<byte[]> rewrite;

        ForwardingHandler(ManagedChannel plugin, UnaryOperator<byte[]> requestRewrite, UnaryOperator<byte[]> rewrite) {
            this.plugin = plugin;
            this.requestRewrite = requestRewrite;
            this.rewrite = rewrite;
        }

        @Override
        public ServerCall.Listener<byte[]> startCall(ServerCall<byte[], byte[]> serverCall, Metadata headers) {
            CallOptions options = CallOptions.DEFAULT.withDeadline(Context.current().getDeadline());
            ClientCall<byte[], byte[]> clientCall = plugin.newCall(serverCall.getMethodDescriptor(), options);
            Relay relay = new Relay(serverCall, clientCall, requestRewrite, rewrite);
            clientCall.start(relay.responses, headers);
            serverCall.request(1);
            clientCall.request(1);
            return relay.requests;
        }
    }

    /**
     * Both directions of one call, with flow control: a side asks for the next message only once the
     * other side can take it (the shape of grpc-java's own proxy example).
     */
    private static final class Relay {
        final Requests requests;
        final Responses responses;

        Relay(ServerCall<byte[], byte[]> serverCall, ClientCall<byte[], byte[]> clientCall,
              UnaryOperator<byte[]> requestRewrite, UnaryOperator<byte[]> rewrite) {
            this.requests = new Requests(serverCall, clientCall, requestRewrite);
            this.responses = new Responses(serverCall, clientCall, rewrite);
        }

        /** Caller to plugin. */
        final class Requests extends ServerCall.Listener<byte[]> {
            private final ServerCall<byte[], byte[]> serverCall;
            private final ClientCall<byte[], byte[]> clientCall;
            private final UnaryOperator<byte[]> rewrite;
            private boolean needToRequest;

            Requests(ServerCall<byte[], byte[]> serverCall, ClientCall<byte[], byte[]> clientCall,
                     UnaryOperator<byte[]> rewrite) {
                this.serverCall = serverCall;
                this.clientCall = clientCall;
                this.rewrite = rewrite;
            }

            @Override
            public void onMessage(byte[] message) {
                clientCall.sendMessage(rewrite.apply(message));
                synchronized (this) {
                    if (clientCall.isReady()) {
                        serverCall.request(1);
                    } else {
                        needToRequest = true;
                    }
                }
            }

            @Override
            public void onHalfClose() {
                clientCall.halfClose();
            }

            @Override
            public void onCancel() {
                clientCall.cancel("the caller cancelled the call", null);
            }

            @Override
            public void onReady() {
                responses.callerReady();
            }

            synchronized void pluginReady() {
                if (needToRequest) {
                    serverCall.request(1);
                    needToRequest = false;
                }
            }
        }

        /** Plugin to caller. */
        final class Responses extends ClientCall.Listener<byte[]> {
            private final ServerCall<byte[], byte[]> serverCall;
            private final ClientCall<byte[], byte[]> clientCall;
            private final UnaryOperator<byte[]> rewrite;
            private boolean needToRequest;

            Responses(ServerCall<byte[], byte[]> serverCall, ClientCall<byte[], byte[]> clientCall,
                      UnaryOperator<byte[]> rewrite) {
                this.serverCall = serverCall;
                this.clientCall = clientCall;
                this.rewrite = rewrite;
            }

            @Override
            public void onHeaders(Metadata headers) {
                serverCall.sendHeaders(headers);
            }

            @Override
            public void onMessage(byte[] message) {
                serverCall.sendMessage(rewrite.apply(message));
                synchronized (this) {
                    if (serverCall.isReady()) {
                        clientCall.request(1);
                    } else {
                        needToRequest = true;
                    }
                }
            }

            @Override
            public void onClose(Status status, Metadata trailers) {
                serverCall.close(status, trailers);
            }

            @Override
            public void onReady() {
                requests.pluginReady();
            }

            synchronized void callerReady() {
                if (needToRequest) {
                    clientCall.request(1);
                    needToRequest = false;
                }
            }
        }
    }
}
