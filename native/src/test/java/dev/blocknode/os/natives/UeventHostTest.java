package dev.blocknode.os.natives;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static dev.blocknode.os.natives.Failures.failsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The uevent socket against the real kernel: attaching a loop device makes the kernel announce it. Needs
 * root (loop devices) and python3 (to play a local process that sends a forged uevent). Other processes on
 * the host may cause uevents meanwhile, so each test looks for its own device among whatever arrives.
 */
@Tag("host")
class UeventHostTest {

    private static final int RECEIVE_BUFFER = 1 << 20;

    private HostFixture host;
    private int socket = -1;

    @BeforeEach
    void setUp() throws Exception {
        host = HostFixture.create();
        socket = LinuxNative.openUeventSocket(RECEIVE_BUFFER);
    }

    @AfterEach
    void tearDown() throws Exception {
        try {
            if (socket >= 0) {
                LinuxNative.close(socket);
            }
        } finally {
            host.close();
        }
    }

    @Test
    void attachingALoopDeviceIsAnnouncedByTheKernel() throws Exception {
        LoopDevice loop = host.loop("disk.img", 1 << 20, false);
        String devpath = "/devices/virtual/block/" + Path.of(loop.device).getFileName();

        List<String> fields = awaitMessageFor(devpath);

        // "action@devpath", then KEY=VALUE strings: ACTION, DEVPATH and SUBSYSTEM always among them.
        String action = fields.get(0).substring(0, fields.get(0).indexOf('@'));
        assertEquals(action + "@" + devpath, fields.get(0));
        assertTrue(fields.contains("ACTION=" + action), fields.toString());
        assertTrue(fields.contains("DEVPATH=" + devpath), fields.toString());
        assertTrue(fields.contains("SUBSYSTEM=block"), fields.toString());
    }

    @Test
    void aForgedUeventFromALocalProcessIsDropped() throws Exception {
        String devpath = "/devices/virtual/block/blocknode-forged";
        int port = portIdOf(socket);
        Commands.run("python3", "-c", """
                import socket, sys
                s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)
                s.sendto(sys.argv[2].encode().replace(b'|', b'\\0'), (int(sys.argv[1]), 0))
                """, Integer.toString(port),
                "add@" + devpath + "|ACTION=add|DEVPATH=" + devpath + "|SUBSYSTEM=block|");

        // The forged datagram arrived (an empty array stands for it) but was not passed on.
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (System.nanoTime() < deadline) {
            byte[] message = LinuxNative.receiveUevent(socket, 100);
            if (message == null) {
                continue;
            }
            if (message.length == 0) {
                return;
            }
            assertTrue(!new String(message, StandardCharsets.UTF_8).contains(devpath), "forged message passed on");
        }
        fail("the forged datagram never arrived");
    }

    @Test
    void aReceiveEndsAtItsTimeout() throws Exception {
        long start = System.nanoTime();
        LinuxNative.receiveUevent(socket, 50); // null, or a real uevent that came earlier
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(millis < 1_000, "a 50 ms receive took " + millis + " ms");
    }

    @Test
    void badArgumentsAreTypedErrors() throws Exception {
        failsWith("EINVAL", () -> LinuxNative.receiveUevent(socket, -1));
        NativeIOException closed = assertThrows(NativeIOException.class, () -> LinuxNative.receiveUevent(-1, 0));
        assertEquals("EBADF", closed.errnoName());
        assertThrows(NativeIOException.class, () -> LinuxNative.close(-1));
    }

    /** Receives until a message about devpath arrives (5 s at most); returns its NUL-separated fields. */
    private List<String> awaitMessageFor(String devpath) throws NativeIOException {
        byte[] header = ("@" + devpath + "\0").getBytes(StandardCharsets.UTF_8);
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (System.nanoTime() < deadline) {
            byte[] message = LinuxNative.receiveUevent(socket, 100);
            if (message != null && message.length > 0 && contains(message, header)) {
                List<String> fields = new ArrayList<>();
                for (String field : new String(message, StandardCharsets.UTF_8).split("\0")) {
                    fields.add(field);
                }
                return fields;
            }
        }
        return fail("no uevent for " + devpath + " within 5 s");
    }

    private static boolean contains(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    /** Our socket's netlink port id, from /proc/net/netlink by the socket's inode (independent of the code under test). */
    private static int portIdOf(int fd) throws IOException {
        String link = Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString(); // socket:[INODE]
        String inode = link.substring(link.indexOf('[') + 1, link.indexOf(']'));
        for (String line : Files.readAllLines(Path.of("/proc/net/netlink"))) {
            String[] columns = line.trim().split("\\s+");
            // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
            if (columns.length >= 10 && columns[9].equals(inode)) {
                assertEquals("15", columns[1], "NETLINK_KOBJECT_UEVENT");
                assertEquals("00000001", columns[3], "bound to the kernel group only");
                return Integer.parseUnsignedInt(columns[2]);
            }
        }
        return fail("socket inode " + inode + " not in /proc/net/netlink");
    }
}
