package dev.blocknode.csi;

import dev.blocknode.csi.client.CsiClient;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.csi.v1.GetPluginInfoRequest;
import dev.blocknode.csi.v1.GetPluginInfoResponse;
import dev.blocknode.csi.v1.IdentityGrpc;
import io.grpc.BindableService;
import io.grpc.stub.StreamObserver;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.Writer;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The socket file under the kubelet root, where a hostile writer may rename a symlink over it at any instant
 * (README, "Threat model"): the mode and group go to the socket the plugin bound or to nothing, and a start
 * whose socket was taken from its name fails, naming it, instead of listening on a socket kubelet cannot find.
 */
@Tag("host")
class SocketFileHostTest {

    /** Not the default 0660 and not the process's group, as in the report: 0666, group daemon. */
    private static final Set<PosixFilePermission> MODE = PosixFilePermissions.fromString("rw-rw-rw-");
    private static final String GROUP = "daemon";
    private static final int ROUNDS = 200;

    @Test
    void theModeAndGroupAreAppliedAndTheSocketStillAnswers(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("csi.sock");
        UnixSocketServer server = UnixSocketServer.start(socket, MODE, Optional.of(GROUP), List.of(named()), List.of());
        try {
            assertSocketAsAsked(socket);
            assertAnswers(socket);
        } finally {
            server.shutdown(Duration.ofSeconds(2));
        }
        assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the socket file is removed on shutdown");
        Files.writeString(socket, "someone else's");
        server.shutdown(Duration.ofSeconds(2));
        assertTrue(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "a second shutdown removes nothing by name");
    }

    /**
     * A symlink at the socket's name that leads to another server's live socket is that server on the socket path
     * (kubelet follows the link): the start is refused, naming the path, and nothing changes on either side (it
     * was removed without a word, and the plugin listened in its place). A link to nothing that answers is
     * stale like any other file there: removed, never what it points to, and the start goes on.
     */
    @Test
    void aSymlinkAtTheNameToALiveSocketIsRefusedAndOneToADeadOneRemoved(@TempDir Path dir, @TempDir Path outside)
            throws Exception {
        Path socket = dir.resolve("csi.sock");
        Path live = outside.resolve("live.sock");
        try (ServerSocketChannel other = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            other.bind(UnixDomainSocketAddress.of(live));
            Files.setPosixFilePermissions(live, PosixFilePermissions.fromString("rw-------"));
            Map<String, Object> before = Files.readAttributes(live, "unix:mode,uid,gid,ino", LinkOption.NOFOLLOW_LINKS);
            Files.createSymbolicLink(socket, live);
            IOException refused = assertThrows(IOException.class, () -> UnixSocketServer.start(socket, MODE,
                    Optional.of(GROUP), List.of(named()), List.of()));
            assertTrue(refused.getMessage().startsWith(socket + " is a symbolic link to " + live + ", where another"
                    + " server is listening; refusing to start"), refused.getMessage());
            assertEquals(live, Files.readSymbolicLink(socket), "the link is left");
            assertEquals(before, Files.readAttributes(live, "unix:mode,uid,gid,ino", LinkOption.NOFOLLOW_LINKS),
                    "the other server's socket is untouched");
        }
        // The other server is gone, its socket file left: the link leads to nothing that answers.
        UnixSocketServer server = UnixSocketServer.start(socket, MODE, Optional.of(GROUP), List.of(named()), List.of());
        try {
            assertSocketAsAsked(socket);
            assertAnswers(socket);
            assertTrue(Files.exists(live, LinkOption.NOFOLLOW_LINKS), "what the link pointed to is left");
        } finally {
            server.shutdown(Duration.ofSeconds(2));
        }
    }

    /**
     * A separate process waits for the socket to appear at its name and at once exchanges it with a symlink to
     * a root-owned 0600 file outside (renameat2 RENAME_EXCHANGE: the socket moves aside, the link takes its
     * name), on every other start; the starts in between are left alone. The outside file must never change,
     * whatever the timing; a start the swap came before must fail naming the socket, its listener closed; a
     * start the swap came after (or that was left alone) has the mode and group on the socket it bound.
     */
    @Test
    @Timeout(value = 10, unit = TimeUnit.MINUTES) // a renamer that never swaps would leave awaitSwap waiting
    void aSymlinkRenamedOverTheSocketRightAfterBindChangesNothingOutside(@TempDir Path dir, @TempDir Path outside)
            throws Exception {
        Path socket = dir.resolve("csi.sock");
        Path aside = dir.resolve("csi.sock.swap");
        Path secret = Files.writeString(outside.resolve("secret"), "root's own\n");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        Map<String, Object> secretBefore = Files.readAttributes(secret, "unix:mode,uid,gid,ino,ctime",
                LinkOption.NOFOLLOW_LINKS);
        assertEquals(0, secretBefore.get("uid"));
        assertEquals(0, secretBefore.get("gid"));
        int refused = 0;
        int claimedBeforeTheSwap = 0;
        try (Renamer renamer = new Renamer(socket, aside)) {
            for (int round = 0; round < ROUNDS; round++) {
                Files.deleteIfExists(socket);
                Files.deleteIfExists(aside);
                Files.createSymbolicLink(aside, secret);
                boolean swapped = round % 2 == 1;
                if (swapped) {
                    renamer.arm();
                }
                UnixSocketServer server = null;
                IOException failure = null;
                try {
                    server = UnixSocketServer.start(socket, MODE, Optional.of(GROUP), List.of(named()), List.of());
                } catch (IOException e) {
                    failure = e;
                }
                if (swapped) {
                    renamer.awaitSwap(); // it swaps once the socket is at the name: before, during or after the start
                }
                try {
                    assertEquals(secretBefore, Files.readAttributes(secret, "unix:mode,uid,gid,ino,ctime",
                            LinkOption.NOFOLLOW_LINKS), "round " + round + ": the file outside changed");
                    if (failure != null) {
                        assertTrue(swapped, "round " + round + ": a start left alone failed: " + failure);
                        assertTrue(failure.getMessage().contains(socket.toString())
                                        && failure.getMessage().contains("no longer leads to the socket this process bound"),
                                "round " + round + ": " + failure.getMessage());
                        assertFalse(listening(aside), "round " + round + ": a refused start left its socket listening");
                        refused++;
                    } else if (swapped) {
                        // The swap came after the start returned: the socket it bound, now aside, is as asked.
                        assertSocketAsAsked(aside);
                        assertAnswers(aside);
                        claimedBeforeTheSwap++;
                    } else {
                        assertSocketAsAsked(socket);
                        assertAnswers(socket);
                    }
                } finally {
                    if (server != null) {
                        server.shutdown(Duration.ofSeconds(2));
                    }
                }
            }
        }
        assertEquals(ROUNDS / 2, refused + claimedBeforeTheSwap, "every swapped start was looked at");
        assertTrue(refused > 0, "no swap came between the bind and the mode: the race was never run ("
                + claimedBeforeTheSwap + " swaps after the start)");
    }

    private static void assertSocketAsAsked(Path socket) throws IOException {
        assertTrue(Files.readAttributes(socket, "unix:mode", LinkOption.NOFOLLOW_LINKS).get("mode") instanceof Integer mode
                && (mode & 0170000) == 0140000, socket + " is a socket");
        assertEquals(MODE, Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS), socket + "'s mode");
        assertEquals(1, Files.readAttributes(socket, "unix:gid", LinkOption.NOFOLLOW_LINKS).get("gid"),
                socket + "'s group (daemon)");
    }

    private static void assertAnswers(Path socket) {
        try (CsiClient client = new CsiClient(socket)) {
            assertEquals("answered", client.identity().withDeadlineAfter(10, TimeUnit.SECONDS)
                    .getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
        }
    }

    private static boolean listening(Path socket) {
        if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            return channel.connect(UnixDomainSocketAddress.of(socket));
        } catch (IOException refused) {
            return false;
        }
    }

    private static BindableService named() {
        return new IdentityGrpc.IdentityImplBase() {
            @Override
            public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
                observer.onNext(GetPluginInfoResponse.newBuilder().setName("answered").build());
                observer.onCompleted();
            }
        };
    }

    /**
     * The hostile writer, a process of its own: armed by a line on its stdin, it polls the socket's name
     * (lstat, no sleep) until a socket is there and then exchanges it with the symlink beside it
     * (renameat2 RENAME_EXCHANGE, which Java lacks), and says so. Unarmed it blocks on its stdin.
     */
    private static final class Renamer implements AutoCloseable {
        private static final String SCRIPT = """
                import ctypes, os, stat, sys
                libc = ctypes.CDLL(None, use_errno=True)
                sock, aside = sys.argv[1].encode(), sys.argv[2].encode()
                for line in sys.stdin:
                    if line.strip() != "arm":
                        break
                    print("armed", flush=True)
                    while True:
                        try:
                            if stat.S_ISSOCK(os.lstat(sock).st_mode):
                                break
                        except FileNotFoundError:
                            pass
                    if libc.renameat2(-100, aside, -100, sock, 2) != 0:
                        print("error", ctypes.get_errno(), flush=True)
                        sys.exit(1)
                    print("swapped", flush=True)
                """;

        private final Process process;
        private final BufferedReader output;
        private final Writer input;

        Renamer(Path socket, Path aside) throws IOException {
            process = new ProcessBuilder("python3", "-c", SCRIPT, socket.toString(), aside.toString())
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            output = process.inputReader();
            input = process.outputWriter();
        }

        /** Returns once the renamer is polling. */
        void arm() throws IOException {
            input.write("arm\n");
            input.flush();
            assertEquals("armed", output.readLine());
        }

        /** Returns once the renamer has exchanged the socket with the link. */
        void awaitSwap() throws IOException {
            String line = output.readLine();
            if (!"swapped".equals(line)) {
                fail("the renamer did not swap: " + line);
            }
        }

        @Override
        public void close() throws IOException, InterruptedException {
            input.write("stop\n");
            input.flush();
            input.close();
            assertEquals(0, process.waitFor(), "the renamer failed");
        }
    }
}
