package dev.blocknode.os.natives;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.blocknode.os.natives.Failures.failsWith;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** connectUnixSocket, peerCredentials and peerAddress against listeners of this JVM. */
class UnixSocketUnitTest {

    @TempDir
    Path tmp;

    @Test
    void aConnectionNamesTheListenersProcessAndTheAddressItWasBoundWith() throws Exception {
        Path socket = tmp.resolve("s");
        try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            listener.bind(UnixDomainSocketAddress.of(socket));
            int fd = LinuxNative.connectUnixSocket(socket.toString());
            try {
                int[] peer = LinuxNative.peerCredentials(fd);
                assertEquals(3, peer.length);
                assertEquals(ProcessHandle.current().pid(), peer[LinuxNative.PEER_PID]);
                assertArrayEquals(socket.toString().getBytes(StandardCharsets.UTF_8), LinuxNative.peerAddress(fd));
            } finally {
                LinuxNative.close(fd);
            }
        }
    }

    @Test
    void aDescriptorsMagicLinkReachesTheOpenedSocketFileWhateverItsNameIsNow() throws Exception {
        Path socket = tmp.resolve("s");
        try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            listener.bind(UnixDomainSocketAddress.of(socket));
            int dir = LinuxNative.openDirectory(tmp.toString());
            int opened = LinuxNative.openBeneath(dir, "s", 0);
            try {
                Files.move(socket, tmp.resolve("moved"));
                int fd = LinuxNative.connectUnixSocket("/proc/self/fd/" + opened);
                try {
                    assertArrayEquals(socket.toString().getBytes(StandardCharsets.UTF_8), LinuxNative.peerAddress(fd),
                            "the listener bound at the old name, reached through the descriptor");
                } finally {
                    LinuxNative.close(fd);
                }
            } finally {
                LinuxNative.close(opened);
                LinuxNative.close(dir);
            }
        }
    }

    @Test
    void aSocketFileNobodyListensOnRefusesAndAMissingOneIsNoSuchPath() throws Exception {
        Path socket = tmp.resolve("s");
        try (ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            dead.bind(UnixDomainSocketAddress.of(socket));
        }
        NativeIOException refused = assertThrows(NativeIOException.class,
                () -> LinuxNative.connectUnixSocket(socket.toString()));
        assertEquals("ECONNREFUSED", refused.errnoName());
        assertEquals(socket.toString(), refused.path());
        failsWith("ENOENT", () -> LinuxNative.connectUnixSocket(tmp.resolve("none").toString()));
        assertEquals("ENAMETOOLONG", assertThrows(NativeIOException.class,
                () -> LinuxNative.connectUnixSocket("/" + "x".repeat(200))).errnoName());
    }

    @Test
    void peerCredentialsOfADescriptorThatIsNotOpenFails() {
        assertEquals("EBADF", assertThrows(NativeIOException.class, () -> LinuxNative.peerCredentials(-1)).errnoName());
        assertEquals("EBADF", assertThrows(NativeIOException.class, () -> LinuxNative.peerAddress(-1)).errnoName());
    }
}
