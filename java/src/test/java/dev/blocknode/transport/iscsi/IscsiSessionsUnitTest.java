package dev.blocknode.transport.iscsi;

import dev.blocknode.os.HostPaths;
import dev.blocknode.testing.FakeSysfs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    /**
     * A search reads the target of a session it has not seen (a new session of another target is found) and remembers
     * it; a session no longer listed is forgotten, so what is remembered is bounded by the live sessions.
     */
    @Test
    void remembersEachSessionsTargetWhileItIsListed(@TempDir Path sys) throws Exception {
        fabricateSession(sys, 1, 3, T1, "127.0.0.1", 3260);
        fabricateSession(sys, 2, 4, T2, "127.0.0.1", 3260);
        IscsiSessions sessions = new IscsiSessions(fakeHost(sys));

        assertEquals(List.of(1), numbers(sessions.ofTarget(T1)));
        assertEquals(Map.of(1, T1, 2, T2), sessions.rememberedTargets());

        fabricateSession(sys, 3, 5, "iqn.2003-01.org.example:t3", "127.0.0.1", 3260);
        assertEquals(List.of(3), numbers(sessions.ofTarget("iqn.2003-01.org.example:t3")));
        assertEquals(List.of(2), numbers(sessions.ofTarget(T2)));

        removeSession(sys, 1);
        assertTrue(sessions.find(new IscsiPath(T1, new Portal("127.0.0.1", 3260), "default")).isEmpty());
        assertEquals(Map.of(2, T2, 3, "iqn.2003-01.org.example:t3"), sessions.rememberedTargets());
        assertTrue(sessions.ended(1));
        assertFalse(sessions.ended(2));
    }

    /**
     * The kernel's session counter is its iSCSI module's: unloaded (every session gone) and loaded again, it gives
     * session1 again, maybe to another target, in a new /sys/class/iscsi_session. What was remembered under the old
     * directory is not used, even when no search ran while the module was away.
     */
    @Test
    void forgetsWhatItRememberedUnderAnotherLoadOfTheModule(@TempDir Path sys) throws Exception {
        fabricateSession(sys, 1, 3, T1, "127.0.0.1", 3260);
        IscsiSessions sessions = new IscsiSessions(fakeHost(sys));
        assertEquals(List.of(1), numbers(sessions.ofTarget(T1)));
        assertEquals(Map.of(1, T1), sessions.rememberedTargets());

        // Unloaded and loaded again: another directory (made before the old one goes, so that it is another inode).
        Path classDir = sys.resolve("class/iscsi_session");
        Path unloaded = Files.move(classDir, sys.resolve("class/iscsi_session.unloaded"));
        fabricateSession(sys, 1, 5, T2, "127.0.0.1", 3260);
        FakeSysfs.deleteTree(unloaded);

        assertEquals(List.of(1), numbers(sessions.ofTarget(T2)));
        assertTrue(sessions.ofTarget(T1).isEmpty());
        assertEquals(Map.of(1, T2), sessions.rememberedTargets());
    }

    /** A session iscsid is still logging in may have no target name yet: read again until it has one. */
    @Test
    void neverRemembersATargetNotSetYet(@TempDir Path sys) throws Exception {
        fabricateSession(sys, 1, 3, T1, "127.0.0.1", 3260);
        fabricateSession(sys, 2, 4, T2, "127.0.0.1", 3260);
        Files.writeString(sys.resolve("class/iscsi_session/session1/targetname"), "(null)\n");
        Files.writeString(sys.resolve("class/iscsi_session/session2/targetname"), "\n");
        IscsiSessions sessions = new IscsiSessions(fakeHost(sys));

        assertTrue(sessions.ofTarget(T1).isEmpty());
        assertTrue(sessions.ofTarget(T2).isEmpty());
        assertTrue(sessions.rememberedTargets().isEmpty());

        Files.writeString(sys.resolve("class/iscsi_session/session1/targetname"), T1 + "\n");
        Files.writeString(sys.resolve("class/iscsi_session/session2/targetname"), T2 + "\n");
        assertEquals(List.of(1), numbers(sessions.ofTarget(T1)));
        assertEquals(List.of(2), numbers(sessions.ofTarget(T2)));
        assertEquals(Map.of(1, T1, 2, T2), sessions.rememberedTargets());
    }

    /**
     * Stage threads search at once while sessions come and go, each number once as the kernel gives them: every thread
     * finds its own new session, and none after it ended; what is remembered is what is listed.
     */
    @Test
    void searchesAtOnceWhileSessionsComeAndGo(@TempDir Path sys) throws Exception {
        int threads = 8;
        int sessionsEach = 25;
        IscsiSessions sessions = new IscsiSessions(fakeHost(sys));
        AtomicInteger kernelCounter = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                String iqn = "iqn.2003-01.org.example:thread" + t;
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < sessionsEach; i++) {
                        int n = kernelCounter.incrementAndGet();
                        fabricateSession(sys, n, n + 2, iqn, "127.0.0.1", 3260);
                        assertEquals(List.of(n), numbers(sessions.ofTarget(iqn)), iqn);
                        removeSession(sys, n);
                        assertTrue(sessions.ofTarget(iqn).isEmpty(), iqn + " after session" + n + " ended");
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
        }
        fabricateSession(sys, kernelCounter.incrementAndGet(), 1, T1, "127.0.0.1", 3260);
        assertEquals(1, sessions.ofTarget(T1).size());
        assertEquals(Map.of(kernelCounter.get(), T1), sessions.rememberedTargets());
    }

    @Test
    void noIscsiModuleMeansNoSessions(@TempDir Path sys) throws Exception {
        IscsiSessions sessions = new IscsiSessions(new HostPaths(sys, sys, sys, sys));
        assertTrue(sessions.all().isEmpty());
        assertTrue(sessions.ofTarget(T1).isEmpty());
    }

    private static final String T1 = "iqn.2003-01.org.example:t1";
    private static final String T2 = "iqn.2003-01.org.example:t2";

    /** What a logout leaves: no class entries, no session device. */
    private static void removeSession(Path sys, int n) throws Exception {
        FakeSysfs.deleteTree(sys.resolve("class/iscsi_session/session" + n));
        FakeSysfs.deleteTree(sys.resolve("class/iscsi_connection/connection" + n + ":0"));
    }

    private static List<Integer> numbers(List<IscsiSessions.Session> sessions) {
        return sessions.stream().map(IscsiSessions.Session::number).sorted().toList();
    }

    private static HostPaths fakeHost(Path sys) {
        return new HostPaths(sys, sys.resolve("dev"), sys.resolve("proc"), sys.resolve("etc"));
    }
}
