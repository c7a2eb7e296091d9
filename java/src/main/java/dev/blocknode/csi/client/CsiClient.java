package dev.blocknode.csi.client;

import dev.blocknode.csi.v1.ControllerGrpc;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** A blocking CSI client on a Unix socket: for the demo, the tests and operators' debugging. */
public final class CsiClient implements AutoCloseable {

    private final EventLoopGroup eventLoops;
    private final ManagedChannel channel;

    public CsiClient(Path socket) {
        this.eventLoops = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        this.channel = UnixSocketChannels.connect(socket, eventLoops);
    }

    public IdentityGrpc.IdentityBlockingStub identity() {
        return IdentityGrpc.newBlockingStub(channel);
    }

    public NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel);
    }

    public ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel);
    }

    @Override
    public void close() {
        channel.shutdownNow();
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }
}
