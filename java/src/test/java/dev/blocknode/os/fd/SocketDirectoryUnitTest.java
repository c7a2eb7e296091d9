package dev.blocknode.os.fd;

import dev.blocknode.logging.LogCapture;
import dev.blocknode.testing.TerminalText;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What {@link SocketDirectory#removeStale} refuses, removes and says, without root (the claim's cases, which need a
 * group to give, are SocketDirectoryHostTest's).
 */
class SocketDirectoryUnitTest {

    private static final String ATTRIBUTES = "unix:mode,uid,gid,ino,ctime";

    @TempDir
    Path dir;
    @TempDir
    Path outside;

    /**
     * A symlink at the socket path that leads to another live socket was removed without a word and the
     * plugin listened in its place; kubelet, following the link, would have reached the other server before. The
     * start is refused, naming the path and the link's target, and nothing changes on either side.
     */
    @Test
    void aSymlinkToALiveSocketIsRefusedAndNothingChanges() throws Exception {
        Path socket = dir.resolve("csi.sock");
        Path live = outside.resolve("live.sock");
        try (ServerSocketChannel other = listenAt(live);
             SocketDirectory directory = SocketDirectory.open(socket)) {
            Map<String, Object> before = Files.readAttributes(live, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
            Files.createSymbolicLink(socket, live);
            IOException refused = assertThrows(IOException.class, directory::removeStale);
            assertEquals(socket + " is a symbolic link to " + live + ", where another server is listening; refusing"
                    + " to start (a live server on the socket path is never taken over: remove the link if that"
                    + " server is not this driver's)", refused.getMessage());
            assertEquals(live, Files.readSymbolicLink(socket), "the link is left");
            assertEquals(before, Files.readAttributes(live, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS));
            assertTrue(other.isOpen());

            Files.delete(socket); // relative, as a link made by hand often is
            Files.createSymbolicLink(socket, dir.relativize(live));
            assertThrows(IOException.class, directory::removeStale);
            assertTrue(Files.isSymbolicLink(socket));
        }
    }

    /** Whatever is removed at the socket path is said in the log, what it was and where. */
    @Test
    void whatIsRemovedIsLogged() throws Exception {
        Path socket = dir.resolve("csi.sock");
        try (SocketDirectory directory = SocketDirectory.open(socket); LogCapture log = LogCapture.installed()) {
            try (ServerSocketChannel dead = listenAt(socket)) {
                assertTrue(dead.isOpen());
            }
            directory.removeStale();
            Path deadOutside = outside.resolve("dead.sock");
            try (ServerSocketChannel dead = listenAt(deadOutside)) {
                assertTrue(dead.isOpen());
            }
            Files.createSymbolicLink(socket, deadOutside);
            directory.removeStale();
            Path target = Files.writeString(outside.resolve("x\u001b[2J\nFORGED\u202e"), "kept");
            Files.createSymbolicLink(socket, target);
            directory.removeStale();
            Files.writeString(socket, "left");
            directory.removeStale();
            assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));
            assertEquals("kept", Files.readString(target), "a link is removed, never what it points to");
            assertTrue(Files.exists(deadOutside, LinkOption.NOFOLLOW_LINKS));

            List<LogCapture.Written> removed = log.written().stream()
                    .filter(w -> w.text().contains("removed ")).toList();
            assertEquals(4, removed.size(), removed.toString());
            assertEquals(Level.INFO, removed.get(0).level());
            assertTrue(removed.get(0).text().contains("removed a stale socket (no server answers on it) at " + socket
                    + ", where the socket is made"), removed.get(0).text());
            assertEquals(Level.WARNING, removed.get(1).level());
            assertTrue(removed.get(1).text().contains("removed a symbolic link to " + deadOutside + " (no server"
                    + " answers there; what it points to is left as it is) at " + socket), removed.get(1).text());
            assertTrue(removed.get(2).text().contains("removed a symbolic link to " + outside
                    + "/x\\x1b[2J\\nFORGED\\u202e (no server"), removed.get(2).text());
            assertTrue(removed.get(3).text().contains("removed a regular file at " + socket), removed.get(3).text());
            for (LogCapture.Written line : removed) {
                TerminalText.assertSafe(line.text().stripTrailing());
            }
        }
    }

    private static ServerSocketChannel listenAt(Path address) throws IOException {
        ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        channel.bind(UnixDomainSocketAddress.of(address));
        return channel;
    }
}
