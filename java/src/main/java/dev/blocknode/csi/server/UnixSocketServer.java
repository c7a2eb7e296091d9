package dev.blocknode.csi.server;

import dev.blocknode.os.fd.SocketDirectory;
import io.grpc.BindableService;
import io.grpc.HandlerRegistry;
import io.grpc.Server;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerMethodDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.ResourceLeakDetector;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * gRPC on a Unix domain socket through Netty's native epoll transport. A stale socket file from a dead
 * process is replaced; a live server on the same path is never stolen from. The socket file is handled in its
 * directory held open by descriptor ({@link SocketDirectory}): bound there, given its mode and group only once
 * it is proved to be this process's socket, never through a name a writer under the kubelet root could have
 * swapped for a symlink. Calls run on call threads
 * ({@link CallThreads}), since volume operations block on syscalls and commands; gRPC's own steps run on
 * the event loop.
 */
public final class UnixSocketServer implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(UnixSocketServer.class.getName());
    /** gRPC's shaded Netty reads its system properties under the relocated package name. */
    static final String LEAK_DETECTION_PROPERTY = "io.grpc.netty.shaded.io.netty.leakDetection.level";
    static final String NETTY_JFR_PROPERTY = "io.grpc.netty.shaded.io.netty.jfr.enabled";

    private final Path socket;
    private final Server server;
    private final EventLoopGroup eventLoops;
    private final ExecutorService executor;
    private final SocketDirectory directory;

    private UnixSocketServer(Path socket, Server server, EventLoopGroup eventLoops, ExecutorService executor,
                             SocketDirectory directory) {
        this.socket = socket;
        this.server = server;
        this.eventLoops = eventLoops;
        this.executor = executor;
        this.directory = directory;
    }

    /**
     * @param mode  permissions of the socket file (0660 by default: kubelet and the registrar run as root or
     *              in the socket's group; nobody else may talk to a plugin that mounts devices)
     * @param group the socket's group, when not the process's own
     * @throws IOException naming the socket when it cannot be served: a live server there, a directory there,
     *                     or a name that no longer leads to the socket just bound (the server is stopped then)
     */
    public static UnixSocketServer start(Path socket, Set<PosixFilePermission> mode, Optional<String> group,
                                         List<BindableService> services, List<ServerInterceptor> interceptors)
            throws IOException {
        return start(socket, mode, group, services, interceptors, Optional.empty(), Set.of());
    }

    /** @param answeredOnEventLoop methods that answer from memory and never block (see Offloading) */
    public static UnixSocketServer start(Path socket, Set<PosixFilePermission> mode, Optional<String> group,
                                         List<BindableService> services, List<ServerInterceptor> interceptors,
                                         Set<String> answeredOnEventLoop) throws IOException {
        return start(socket, mode, group, services, interceptors, Optional.empty(), answeredOnEventLoop);
    }

    /** @param fallback answers methods that no service defines (a proxy, for instance) */
    public static UnixSocketServer start(Path socket, Set<PosixFilePermission> mode, Optional<String> group,
                                         List<BindableService> services, List<ServerInterceptor> interceptors,
                                         Optional<HandlerRegistry> fallback) throws IOException {
        return start(socket, mode, group, services, interceptors, fallback, Set.of());
    }

    private static UnixSocketServer start(Path socket, Set<PosixFilePermission> mode, Optional<String> group,
                                          List<BindableService> services, List<ServerInterceptor> interceptors,
                                          Optional<HandlerRegistry> fallback, Set<String> answeredOnEventLoop)
            throws IOException {
        // Before anything is bound: an unknown group makes no socket at all.
        Optional<GroupPrincipal> principal = group.isPresent()
                ? Optional.of(socket.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName(group.get()))
                : Optional.empty();
        SocketDirectory directory = SocketDirectory.open(socket);
        try {
            directory.removeStale();
        } catch (IOException | RuntimeException e) {
            directory.close();
            throw e;
        }
        disableLeakSamplingUnlessAsked();
        EventLoopGroup eventLoops = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        ExecutorService executor = CallThreads.newPool();
        // gRPC's steps run on the event loop; each call's own code on a call thread (see Offloading).
        Offloading offloading = new Offloading(executor, answeredOnEventLoop);
        List<ServerInterceptor> chain = new ArrayList<>();
        chain.add(offloading); // first in the list = innermost: it sees the Context the others set up
        chain.addAll(interceptors);
        // Bound through the directory's descriptor: the socket file is made in the directory opened above,
        // whatever a writer under the kubelet root does to the names on the way (Netty's unlink at close too).
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new DomainSocketAddress(directory.bindAddress()))
                .channelType(EpollServerDomainSocketChannel.class)
                .bossEventLoopGroup(eventLoops)
                .workerEventLoopGroup(eventLoops)
                .directExecutor()
                // gRPC sets SO_KEEPALIVE on every channel; it means nothing on a Unix socket (null drops it).
                .withChildOption(ChannelOption.SO_KEEPALIVE, null);
        cheapConnections(builder);
        fallback.ifPresent(registry -> builder.fallbackHandlerRegistry(new OffloadedRegistry(registry, offloading)));
        for (BindableService service : services) {
            builder.addService(ServerInterceptors.intercept(service, chain));
        }
        Server server;
        try {
            server = builder.build().start();
        } catch (IOException | RuntimeException e) {
            eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            executor.shutdownNow();
            directory.close();
            throw new IOException("cannot listen on " + socket + ": " + e.getMessage(), e);
        }
        UnixSocketServer started = new UnixSocketServer(socket, server, eventLoops, executor, directory);
        try {
            // The mode and group go to the socket this process bound, by descriptor, or to nothing: a name that
            // no longer leads to it (replaced, renamed away) stops the server, never leaving it listening on a
            // socket kubelet cannot find. Kubelet restarts the container, and the next start removes what is there.
            directory.claim(mode, principal);
        } catch (IOException | RuntimeException e) {
            started.stopNow();
            throw new IOException("cannot listen on " + socket + ": " + e.getMessage(), e);
        }
        LOG.info(() -> "listening on unix://" + socket);
        return started;
    }

    public Path socket() {
        return socket;
    }

    /**
     * Stops taking calls, lets running ones finish for up to {@code grace}, then cancels the rest and
     * removes the socket file.
     */
    public void shutdown(Duration grace) {
        server.shutdown();
        try {
            if (!server.awaitTermination(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warning(() -> "calls still running after " + grace.toSeconds() + " s; cancelling them");
                server.shutdownNow();
                server.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        } finally {
            release();
        }
    }

    /** A start that cannot keep its socket: stops at once, taking no call. */
    private void stopNow() {
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            release();
        }
    }

    /** After the server: its threads, then the socket file (only if still ours), then the directory. */
    private void release() {
        executor.shutdownNow();
        // The listener is closed on the event loop, which unlinks its name (through the directory's descriptor):
        // the directory is closed only after that.
        eventLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        try {
            directory.removeIfOurs();
        } catch (IOException e) {
            LOG.warning(() -> "cannot remove socket " + socket + ": " + e.getMessage());
        } finally {
            directory.close();
        }
    }

    @Override
    public void close() {
        shutdown(Duration.ofSeconds(5));
    }

    /**
     * Kubelet dials a new connection for every call, NodeGetCapabilities included, so what the server does per
     * connection is paid several times per volume operation (test-e2e/bench/README.md, "Where a new
     * connection's CPU goes"). gRPC's default flow control is tuned for long-lived connections over networks,
     * by bandwidth-delay pings: the server raises the connection's window to 1 MiB with a WINDOW_UPDATE right
     * after its SETTINGS, and follows the first DATA of each burst with a PING of its own, which the client
     * answers and the server reads: two more frames out and one more in for every connection. A CSI request is
     * a few hundred bytes; HTTP/2's own 64 KiB window never fills, and a fixed window of that size sends
     * neither.
     */
    static void cheapConnections(NettyServerBuilder builder) {
        builder.flowControlWindow(HTTP2_DEFAULT_WINDOW); // fixed: no bandwidth-delay pings
    }

    /** RFC 9113's initial window, a connection's and a stream's before any SETTINGS or WINDOW_UPDATE. */
    static final int HTTP2_DEFAULT_WINDOW = 65_535;

    /** A fallback registry whose methods hop off the event loop like the services' (see Offloading). */
    private static final class OffloadedRegistry extends HandlerRegistry {
        private final HandlerRegistry registry;
        private final Offloading offloading;

        OffloadedRegistry(HandlerRegistry registry, Offloading offloading) {
            this.registry = registry;
            this.offloading = offloading;
        }

        @Override
        public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
            ServerMethodDefinition<?, ?> method = registry.lookupMethod(methodName, authority);
            return method == null ? null : offloaded(method);
        }

        private <Q, A> ServerMethodDefinition<Q, A> offloaded(ServerMethodDefinition<Q, A> method) {
            ServerCallHandler<Q, A> handler = method.getServerCallHandler();
            return method.withServerCallHandler((call, headers) -> offloading.interceptCall(call, headers, handler));
        }
    }

    /**
     * Netty's leak detector samples buffer allocations and records a stack trace for each sampled buffer at
     * every touch, on every RPC path (a measurable share of a call here). The buffers are gRPC's own; this
     * plugin never handles one, so there is no leak of ours it could find. The property that sets its level
     * still wins, for whoever wants to look.
     */
    private static void disableLeakSamplingUnlessAsked() {
        if (System.getProperty(LEAK_DETECTION_PROPERTY) == null) {
            ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
        }
    }

    /**
     * Netty 4.2 emits JFR events for its buffer allocations; the first call's first buffer then registers
     * them with JFR (annotation proxies, event classes), about 100 ms of the first RPC after a start, which
     * kubelet's first Probe waits for. Off unless asked for: no one records them. Must run before Netty's
     * PlatformDependent initializes, i.e. before any Netty class is used (see Main).
     */
    public static void disableNettyJfrEventsUnlessAsked() {
        if (System.getProperty(NETTY_JFR_PROPERTY) == null) {
            System.setProperty(NETTY_JFR_PROPERTY, "false");
        }
    }
}
