package dev.blocknode.csi.client;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;

import java.nio.file.Path;

/** gRPC client channels to a Unix socket, over the same native epoll transport as the server. */
public final class UnixSocketChannels {

    private UnixSocketChannels() {
    }

    /** A plaintext channel to {@code socket}; the socket may appear later (gRPC reconnects with backoff). */
    public static ManagedChannel connect(Path socket, EventLoopGroup eventLoops) {
        return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toAbsolutePath().toString()))
                .channelType(EpollDomainSocketChannel.class)
                .eventLoopGroup(eventLoops)
                // gRPC sets SO_KEEPALIVE on every channel; it means nothing on a Unix socket (null drops it).
                .withOption(ChannelOption.SO_KEEPALIVE, null)
                .usePlaintext()
                .build();
    }
}
