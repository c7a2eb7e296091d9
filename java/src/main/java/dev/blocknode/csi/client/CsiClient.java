package dev.blocknode.csi.client;

import dev.blocknode.csi.v1.ControllerGrpc;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGrpc;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** A blocking CSI client on a Unix socket: for the demo, the tests and operators' debugging. */
public final class CsiClient implements AutoCloseable {

    private final ManagedChannel channel;

    public CsiClient(Path socket) {
        this.channel = Grpc.newChannelBuilder("unix://" + socket.toAbsolutePath(), InsecureChannelCredentials.create())
                .build();
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
        }
    }
}
