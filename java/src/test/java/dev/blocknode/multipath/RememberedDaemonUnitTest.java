package dev.blocknode.multipath;

import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.ScriptedCommandRunner;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RememberedDaemonUnitTest {

    private final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    private final ManualClock clock = new ManualClock();
    /** The questions no caller waits for, run by {@link #runBackground()} when the test says. */
    private final List<Runnable> background = Collections.synchronizedList(new ArrayList<>());
    /** The node's /proc/net/unix: multipathd's socket listed, as when it runs. */
    private final Path unixSockets;
    private final RememberedDaemon daemon;

    RememberedDaemonUnitTest(@TempDir Path temp) throws IOException {
        unixSockets = temp.resolve("unix");
        Files.writeString(unixSockets, "Num       RefCount Protocol Flags    Type St Inode Path\n"
                + "0000000000000000: 00000002 00000000 00010000 0001 01 20311 @/org/kernel/linux/storage/multipathd\n");
        daemon = new RememberedDaemon(commands, unixSockets, clock, background::add);
    }

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    private void runBackground() {
        List<Runnable> now;
        synchronized (background) {
            now = new ArrayList<>(background);
            background.clear();
        }
        now.forEach(Runnable::run);
    }

    @Test
    void aBurstOfStagesAsksOnceWhileTheAnswerIsFresh() {
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 running\n");
        for (int volume = 0; volume < 50; volume++) {
            assertTrue(daemon.isRunning());
            clock.advance(Duration.ofMillis(100));
        }
        assertEquals(List.of(), background);
    }

    @Test
    void anAgedRunningAnswerIsUsedWhileTheDaemonIsAskedAgainInTheBackground() {
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 running\n");
        assertTrue(daemon.isRunning());
        clock.advance(RememberedDaemon.RUNNING_KEPT);
        for (int volume = 0; volume < 20; volume++) {
            assertTrue(daemon.isRunning(), "no stage of a burst waits for the question");
        }
        assertEquals(1, background.size(), "one question for all of them");
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 idle\n");
        runBackground();
        assertTrue(daemon.isRunning());
        assertEquals(List.of(), background, "the new answer is fresh");
    }

    @Test
    void aDaemonFoundGoneInTheBackgroundIsAskedAgainByTheNextCaller() {
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 running\n");
        assertTrue(daemon.isRunning());
        clock.advance(RememberedDaemon.RUNNING_KEPT);
        assertTrue(daemon.isRunning());
        commands.expect("multipathd", "show", "daemon").fails(1, "error -111 receiving packet");
        runBackground();
        commands.expect("multipathd", "show", "daemon").fails(1, "error -111 receiving packet");
        assertFalse(daemon.isRunning(), "an absent daemon is never an answer kept");
    }

    @Test
    void aRunningAnswerPastItsStaleLimitIsAskedBeforeAnswering() {
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 running\n");
        assertTrue(daemon.isRunning());
        clock.advance(RememberedDaemon.RUNNING_STALE);
        commands.expect("multipathd", "show", "daemon").fails(1, "error -111 receiving packet");
        assertFalse(daemon.isRunning(), "a node quiet for a minute asks before it answers");
        assertEquals(List.of(), background);
    }

    @Test
    void aLateAnswerIsKeptAsABusyDaemon() {
        commands.expect("multipathd", "show", "daemon").timesOut();
        assertTrue(daemon.isRunning());
        assertTrue(daemon.isRunning(), "kept: no second question while the daemon is busy");
    }

    @Test
    void anAbsentDaemonIsAskedAgainEveryTime() {
        commands.expect("multipathd", "show", "daemon").fails(1, "error -111 receiving packet");
        commands.expect("multipathd", "show", "daemon").succeeds("pid 900 idle\n");
        assertFalse(daemon.isRunning());
        assertTrue(daemon.isRunning(), "a daemon started since is seen at once");
    }

    @Test
    void theFindMultipathsPolicyIsReadInTheBackgroundOnceAMinute() {
        assertFalse(daemon.takesEveryPath(), "nothing read yet: the WWID is registered, and nobody waits for the read");
        commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"off\"\n}\n");
        runBackground();
        for (int volume = 0; volume < 50; volume++) {
            assertTrue(daemon.takesEveryPath());
            clock.advance(Duration.ofMillis(500));
        }
        assertEquals(List.of(), background, "read once in the minute");
        clock.advance(RememberedDaemon.CONFIG_KEPT);
        assertTrue(daemon.takesEveryPath(), "the last answer while it is read again");
        commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"strict\"\n}\n");
        runBackground();
        assertFalse(daemon.takesEveryPath(), "a reconfigured daemon is followed a minute later");
    }

    @Test
    void aConfigThatCannotBeReadMeansRegisteringAndIsNotAskedAgainAtOnce() {
        assertFalse(daemon.takesEveryPath());
        commands.expect("multipathd", "show", "config").timesOut();
        runBackground();
        assertFalse(daemon.takesEveryPath());
        assertEquals(List.of(), background, "a busy daemon is not asked for its config once per volume");
        clock.advance(RememberedDaemon.CONFIG_KEPT);
        assertFalse(daemon.takesEveryPath());
        commands.expect("multipathd", "show", "config").fails(1, "error -111 receiving packet");
        runBackground();
        assertFalse(daemon.takesEveryPath());
    }

    @Test
    void aBusyDaemonKeepsTheLastConfigRead() {
        daemon.takesEveryPath();
        commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"greedy\"\n}\n");
        runBackground();
        assertTrue(daemon.takesEveryPath());
        clock.advance(RememberedDaemon.CONFIG_KEPT);
        assertTrue(daemon.takesEveryPath());
        commands.expect("multipathd", "show", "config").timesOut();
        runBackground();
        assertTrue(daemon.takesEveryPath(), "a late answer in a burst changes nothing of the config read before");
    }

    @Test
    void atStartTheDaemonAndItsConfigAreAskedInTheBackground() {
        daemon.readingConfigNow();
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 running\n");
        commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"greedy\"\n}\n");
        runBackground(); // the daemon's question, which queues the config's read
        runBackground();
        assertTrue(daemon.takesEveryPath());
        assertEquals(List.of(), background);
    }

    @Test
    void concurrentCallersShareOneQuestion() throws InterruptedException {
        CountDownLatch start = new CountDownLatch(1);
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 running\n");
        List<Thread> threads = new ArrayList<>();
        List<Boolean> answers = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < 16; i++) {
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                answers.add(daemon.isRunning());
            }));
        }
        start.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
        assertTrue(answers.size() == 16 && answers.stream().allMatch(a -> a), answers.toString());
    }
}
