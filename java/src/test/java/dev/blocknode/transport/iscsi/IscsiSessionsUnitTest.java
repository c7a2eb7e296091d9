package dev.blocknode.transport.iscsi;

import dev.blocknode.os.HostPaths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Sessions read from a sysfs tree laid out as the kernel lays it out for open-iscsi. */
class IscsiSessionsUnitTest {

    /** /sys/devices/platform/hostH/sessionN/targetH:0:0/H:0:0:L, with the class links pointing into it. */
    static void fabricateSession(Path sys, int n, int host, String iqn, String address, int port, int... luns)
            throws Exception {
        Path sessionDev = sys.resolve("devices/platform/host" + host + "/session" + n);
        Path target = sessionDev.resolve("target" + host + ":0:0");
        Files.createDirectories(target);
        for (int lun : luns) {
            Files.createDirectories(target.resolve(host + ":0:0:" + lun));
        }
        Path classEntry = sys.resolve("class/iscsi_session/session" + n);
        Files.createDirectories(classEntry);
        Files.writeString(classEntry.resolve("targetname"), iqn + "\n");
        Files.writeString(classEntry.resolve("ifacename"), "default\n");
        Files.createSymbolicLink(classEntry.resolve("device"), sessionDev);
        Path connection = sys.resolve("class/iscsi_connection/connection" + n + ":0");
        Files.createDirectories(connection);
        Files.writeString(connection.resolve("persistent_address"), address + "\n");
        Files.writeString(connection.resolve("persistent_port"), port + "\n");
    }

    @Test
    void readsSessionsHostsTargetsAndDevices(@TempDir Path sys) throws Exception {
        fabricateSession(sys, 1, 3, "iqn.2003-01.org.example:t1", "127.0.0.1", 3260, 0, 1);
        fabricateSession(sys, 2, 4, "iqn.2003-01.org.example:t1", "127.0.0.2", 3260);
        IscsiSessions sessions = new IscsiSessions(fakeHost(sys));

        assertEquals(2, sessions.all().size());
        IscsiSessions.Session first = sessions.find(new IscsiPath("iqn.2003-01.org.example:t1",
                new Portal("127.0.0.1", 3260), "default")).orElseThrow();
        assertEquals(3, first.host());
        assertArrayEquals(new int[]{0, 0}, first.channelAndTarget());
        assertEquals(List.of("3:0:0:0", "3:0:0:1"), sessions.devices(first).stream().sorted().toList());

        IscsiSessions.Session second = sessions.find(new IscsiPath("iqn.2003-01.org.example:t1",
                new Portal("127.0.0.2", 3260), "default")).orElseThrow();
        assertEquals(4, second.host());
        assertTrue(sessions.devices(second).isEmpty(), "no LUN left: the session may be logged out");
        assertTrue(sessions.find(new IscsiPath("iqn.2003-01.org.example:t1", new Portal("127.0.0.3", 3260),
                "default")).isEmpty());
    }

    /**
     * A target's sessions are what {@code all} lists of that target, in its order; a session of another target, or
     * one whose attributes are not all there yet (being created or torn down), is not among them.
     */
    @Test
    void ofTargetListsTheTargetsSessionsAsAllDoes(@TempDir Path sys) throws Exception {
        fabricateSession(sys, 1, 3, "iqn.2003-01.org.example:t1", "127.0.0.1", 3260, 0);
        fabricateSession(sys, 2, 4, "iqn.2003-01.org.example:t2", "127.0.0.1", 3260, 0);
        fabricateSession(sys, 3, 5, "iqn.2003-01.org.example:t1", "127.0.0.2", 3260, 0);
        fabricateSession(sys, 4, 6, "iqn.2003-01.org.example:t1", "127.0.0.3", 3260);
        Files.delete(sys.resolve("class/iscsi_connection/connection4:0/persistent_port")); // session 4 half made
        Files.createDirectories(sys.resolve("class/iscsi_session/session5")); // nor a targetname yet
        IscsiSessions sessions = new IscsiSessions(fakeHost(sys));

        List<IscsiSessions.Session> t1 = sessions.ofTarget("iqn.2003-01.org.example:t1");

        assertEquals(sessions.all().stream().filter(s -> s.iqn().endsWith(":t1")).toList(), t1);
        assertEquals(List.of(1, 3), t1.stream().map(IscsiSessions.Session::number).sorted().toList());
        assertEquals(List.of(2), sessions.ofTarget("iqn.2003-01.org.example:t2").stream()
                .map(IscsiSessions.Session::number).toList());
        assertTrue(sessions.ofTarget("iqn.2003-01.org.example:t3").isEmpty());
    }

    /** With node.session.scan=manual a fresh session has no target dir until a LUN is scanned. */
    @Test
    void aSessionWithoutTargetDirUsesItsTargetId(@TempDir Path sys) throws Exception {
        fabricateSession(sys, 7, 9, "iqn.2003-01.org.example:t2", "127.0.0.1", 3260);
        Path sessionDev = sys.resolve("devices/platform/host9/session7");
        Files.delete(sessionDev.resolve("target9:0:0"));
        Files.writeString(sys.resolve("class/iscsi_session/session7/target_id"), "2\n");
        IscsiSessions.Session session = new IscsiSessions(fakeHost(sys))
                .all().get(0);
        assertTrue(session.scsiTargets().isEmpty());
        assertArrayEquals(new int[]{0, 2}, session.channelAndTarget());
    }

    @Test
    void noIscsiModuleMeansNoSessions(@TempDir Path sys) throws Exception {
        assertTrue(new IscsiSessions(new HostPaths(sys, sys, sys, sys)).all().isEmpty());
    }

    private static HostPaths fakeHost(Path sys) {
        return new HostPaths(sys, sys.resolve("dev"), sys.resolve("proc"), sys.resolve("etc"));
    }
}
