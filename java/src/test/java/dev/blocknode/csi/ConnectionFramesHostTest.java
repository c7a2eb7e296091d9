package dev.blocknode.csi;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.csi.v1.ProbeRequest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the server sends on a new connection, frame by frame, as kubelet's connection per call sees it: a
 * client written by hand on the socket (HTTP/2's preface, a Probe in one HEADERS and one DATA frame) reads
 * every frame up to the call's trailers.
 */
@Tag("host")
class ConnectionFramesHostTest {

    private static final int DATA = 0, HEADERS = 1, SETTINGS = 4, PING = 6, WINDOW_UPDATE = 8;
    private static final int END_STREAM = 0x1, ACK = 0x1, END_HEADERS = 0x4;
    private static final int SETTINGS_INITIAL_WINDOW_SIZE = 4;

    private record Frame(int type, int flags, int stream, byte[] payload) {
    }

    @Test
    @Timeout(30) // a request the window held back would wait for ever
    void aRequestLargerThanTheFixedWindowIsStillRead(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("csi.sock");
        UnixSocketServer server = start(socket);
        try (CsiClient client = new CsiClient(socket)) {
            // 1 MiB in a field Probe does not know: the client must wait for the server's WINDOW_UPDATEs.
            ProbeRequest large = ProbeRequest.newBuilder().setUnknownFields(UnknownFieldSet.newBuilder()
                    .addField(15, UnknownFieldSet.Field.newBuilder()
                            .addLengthDelimited(ByteString.copyFrom(new byte[1 << 20])).build()).build()).build();
            assertTrue(client.identity().probe(large).getReady().getValue());
        } finally {
            server.shutdown(Duration.ofSeconds(2));
        }
    }

    private static UnixSocketServer start(Path socket) throws IOException {
        return UnixSocketServer.start(socket, PosixFilePermissions.fromString("rw-------"), Optional.empty(),
                List.of(new IdentityService("frames.blocknode.dev", "v0", IdentityService.nodePlugin(false),
                        List::of)), List.of(), IdentityService.ANSWERED_FROM_MEMORY);
    }

    @Test
    @Timeout(30) // a server that never answers would leave the reads waiting
    void aProbeOnANewConnectionCostsNoWindowUpdateAndNoPing(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("csi.sock");
        UnixSocketServer server = start(socket);
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            channel.connect(UnixDomainSocketAddress.of(socket));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            out.writeBytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            frame(out, SETTINGS, 0, 0, new byte[0]);
            frame(out, HEADERS, END_HEADERS, 1, probeHeaders());
            frame(out, DATA, END_STREAM, 1, new byte[5]); // an empty ProbeRequest, uncompressed
            channel.write(ByteBuffer.wrap(out.toByteArray()));

            List<Frame> frames = new ArrayList<>();
            Frame last;
            do {
                last = read(channel);
                frames.add(last);
                if (last.type() == SETTINGS && (last.flags() & ACK) == 0) {
                    ByteArrayOutputStream ack = new ByteArrayOutputStream();
                    frame(ack, SETTINGS, ACK, 0, new byte[0]);
                    channel.write(ByteBuffer.wrap(ack.toByteArray()));
                }
            } while (!(last.type() == HEADERS && last.stream() == 1 && (last.flags() & END_STREAM) != 0));

            List<Integer> types = frames.stream().map(Frame::type).toList();
            assertTrue(types.contains(DATA), "the Probe was answered: " + types);
            // gRPC's default (bandwidth-delay flow control) sends a WINDOW_UPDATE to 1 MiB after its SETTINGS
            // and a PING after the request's DATA: frames a connection per call pays for, and reads back.
            assertFalse(types.contains(WINDOW_UPDATE), "a WINDOW_UPDATE on a new connection: " + types);
            assertFalse(types.contains(PING), "a PING on a new connection: " + types);
            Frame settings = frames.stream().filter(f -> f.type() == SETTINGS && (f.flags() & ACK) == 0)
                    .findFirst().orElseThrow();
            assertEquals(Set.of(65_535), initialWindows(settings), "the stream window is HTTP/2's default");
        } finally {
            server.shutdown(Duration.ofSeconds(2));
        }
    }

    /** The INITIAL_WINDOW_SIZE values a SETTINGS frame carries (HTTP/2's default when it carries none). */
    private static Set<Integer> initialWindows(Frame settings) {
        ByteBuffer b = ByteBuffer.wrap(settings.payload());
        Set<Integer> windows = new HashSet<>();
        while (b.remaining() >= 6) {
            int id = b.getShort() & 0xffff;
            int value = b.getInt();
            if (id == SETTINGS_INITIAL_WINDOW_SIZE) {
                windows.add(value);
            }
        }
        return windows.isEmpty() ? Set.of(65_535) : windows;
    }

    /** Probe's request headers, each an HPACK literal without indexing, with a new name, no Huffman coding. */
    private static byte[] probeHeaders() {
        ByteArrayOutputStream h = new ByteArrayOutputStream();
        String[][] headers = {{":method", "POST"}, {":scheme", "http"}, {":path", "/csi.v1.Identity/Probe"},
                {":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}};
        for (String[] header : headers) {
            h.write(0);
            for (String s : header) {
                byte[] bytes = s.getBytes(StandardCharsets.US_ASCII);
                h.write(bytes.length); // all shorter than 127: the 7-bit prefix holds the length
                h.writeBytes(bytes);
            }
        }
        return h.toByteArray();
    }

    private static void frame(ByteArrayOutputStream out, int type, int flags, int stream, byte[] payload) {
        out.write(payload.length >>> 16);
        out.write(payload.length >>> 8);
        out.write(payload.length);
        out.write(type);
        out.write(flags);
        out.writeBytes(ByteBuffer.allocate(4).putInt(stream).array());
        out.writeBytes(payload);
    }

    private static Frame read(SocketChannel channel) throws IOException {
        ByteBuffer header = readFully(channel, 9);
        int length = ((header.get() & 0xff) << 16) | ((header.get() & 0xff) << 8) | (header.get() & 0xff);
        int type = header.get() & 0xff;
        int flags = header.get() & 0xff;
        int stream = header.getInt() & 0x7fffffff;
        return new Frame(type, flags, stream, readFully(channel, length).array());
    }

    private static ByteBuffer readFully(SocketChannel channel, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (channel.read(b) < 0) {
                throw new IOException("the server closed the connection after " + b.position() + " of " + n
                        + " bytes");
            }
        }
        return b.flip();
    }
}
