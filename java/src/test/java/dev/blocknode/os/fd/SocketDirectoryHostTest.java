package dev.blocknode.os.fd;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What {@link SocketDirectory#claim} accepts as this process's socket, and what {@link SocketDirectory#removeStale}
 * removes, each case set up by hand (SocketFileHostTest races the same through the server).
 */
@Tag("host")
class SocketDirectoryHostTest {

    private static final Set<PosixFilePermission> MODE = PosixFilePermissions.fromString("rw-rw-rw-");
    private static final String ATTRIBUTES = "unix:mode,uid,gid,ino,ctime";

    @TempDir
    Path dir;

    @Test
    void theSocketBoundAtTheBindAddressIsClaimed() throws Exception {
        try (SocketDirectory directory = SocketDirectory.open(dir.resolve("csi.sock"));
             ServerSocketChannel listener = listenAt(directory.bindAddress())) {
            directory.claim(MODE, Optional.of(daemon()));
            Path socket = dir.resolve("csi.sock");
            assertEquals(MODE, Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS));
            assertEquals(1, Files.getAttribute(socket, "unix:gid", LinkOption.NOFOLLOW_LINKS));
            directory.removeIfOurs();
            assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));
        }
    }

    @Test
    void aSymlinkSwappedInIsRefusedAndNothingChanges(@TempDir Path outside) throws Exception {
        Path secret = Files.writeString(outside.resolve("secret"), "x");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        Map<String, Object> before = Files.readAttributes(secret, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
        Path socket = dir.resolve("csi.sock");
        try (SocketDirectory directory = SocketDirectory.open(socket);
             ServerSocketChannel listener = listenAt(directory.bindAddress())) {
            Path aside = Files.move(socket, dir.resolve("aside"));
            Map<String, Object> asideBefore = Files.readAttributes(aside, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
            Files.createSymbolicLink(socket, secret);
            IOException refused = assertThrows(IOException.class, () -> directory.claim(MODE, Optional.of(daemon())));
            assertTrue(refused.getMessage().startsWith(socket + " no longer leads to the socket this process bound"
                    + " (a symlink is there now)"), refused.getMessage());
            assertEquals(before, Files.readAttributes(secret, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS));
            assertEquals(asideBefore, Files.readAttributes(aside, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS),
                    "not even the socket renamed away is changed: it is not at the name kubelet uses");
            directory.removeIfOurs();
            assertTrue(Files.isSymbolicLink(socket), "nothing claimed, nothing removed");
        }
    }

    @Test
    void aSocketAtTheNameThatIsNotThisProcesssIsRefused() throws Exception {
        Path socket = dir.resolve("csi.sock");
        try (SocketDirectory directory = SocketDirectory.open(socket)) {
            // Gone: the listener closed, its file left behind.
            try (ServerSocketChannel dead = listenAt(directory.bindAddress())) {
                assertTrue(dead.isOpen());
            }
            assertRefused(directory, "no listener of this process answers on it: ECONNREFUSED");
            Files.delete(socket);
            // Another listener of this process, bound at another address (the name itself, not the descriptor's).
            try (ServerSocketChannel other = listenAt(socket.toString())) {
                assertRefused(directory, "it is another listener of this process");
            }
            Files.delete(socket);
            // Another process's listener.
            Process python = new ProcessBuilder("python3", "-c", """
                    import socket, sys
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.bind(sys.argv[1]); s.listen(8)
                    print("listening", flush=True)
                    sys.stdin.readline()
                    """, socket.toString()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            try (BufferedReader output = python.inputReader()) {
                assertEquals("listening", output.readLine());
                assertRefused(directory, "it is process " + python.pid() + "'s listener");
            } finally {
                python.outputWriter().close();
                assertEquals(0, python.waitFor());
            }
        }
    }

    @Test
    void whatADeadProcessLeftIsRemovedButNeverADirectoryOrALiveServer(@TempDir Path outside) throws Exception {
        Path socket = dir.resolve("csi.sock");
        try (SocketDirectory directory = SocketDirectory.open(socket)) {
            Files.writeString(socket, "left");
            directory.removeStale();
            assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));

            Path target = Files.writeString(outside.resolve("target"), "kept");
            Files.createSymbolicLink(socket, target);
            directory.removeStale();
            assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));
            assertEquals("kept", Files.readString(target), "the link is removed, not what it points to");

            try (ServerSocketChannel dead = listenAt(socket.toString())) {
                assertTrue(dead.isOpen());
            }
            directory.removeStale();
            assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));

            try (ServerSocketChannel live = listenAt(socket.toString())) {
                IOException refused = assertThrows(IOException.class, directory::removeStale);
                assertEquals("another server is already listening on " + socket + "; refusing to start",
                        refused.getMessage());
                assertTrue(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));
            }
            Files.delete(socket);

            Files.createDirectory(socket);
            IOException directoryThere = assertThrows(IOException.class, directory::removeStale);
            assertEquals(socket + " is a directory, not a socket path", directoryThere.getMessage());
            assertTrue(Files.isDirectory(socket, LinkOption.NOFOLLOW_LINKS));
        }
    }

    @Test
    void theBindAddressNamesTheDirectoryOpenedEvenAfterItIsRenamed(@TempDir Path parent) throws Exception {
        Path socketDir = parent.resolve("plugin");
        Path socket = socketDir.resolve("csi.sock");
        try (SocketDirectory directory = SocketDirectory.open(socket)) {
            assertTrue(Files.isDirectory(socketDir), "made when missing");
            Path moved = Files.move(socketDir, parent.resolve("moved"));
            Files.createSymbolicLink(socketDir, parent); // a writer's link where the directory was
            try (ServerSocketChannel listener = listenAt(directory.bindAddress())) {
                assertTrue(Files.exists(moved.resolve("csi.sock"), LinkOption.NOFOLLOW_LINKS),
                        "bound in the directory that was opened, not through the link");
                assertFalse(Files.exists(parent.resolve("csi.sock"), LinkOption.NOFOLLOW_LINKS));
            }
        }
    }

    private static void assertRefused(SocketDirectory directory, String why) throws IOException {
        Map<String, Object> before = Files.readAttributes(directory.socket(), ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
        IOException refused = assertThrows(IOException.class, () -> directory.claim(MODE, Optional.of(daemon())));
        assertTrue(refused.getMessage().contains("(" + why + ")"), refused.getMessage());
        assertEquals(before, Files.readAttributes(directory.socket(), ATTRIBUTES, LinkOption.NOFOLLOW_LINKS));
    }

    private static ServerSocketChannel listenAt(String address) throws IOException {
        ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        channel.bind(UnixDomainSocketAddress.of(address));
        return channel;
    }

    private static GroupPrincipal daemon() throws IOException {
        return Path.of("/").getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName("daemon");
    }
}
