package dev.blocknode.multipath;

import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.ScriptedCommandRunner;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RememberedDaemonUnitTest {

    private final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    private final ManualClock clock = new ManualClock();
    private final MultipathDaemon daemon = new RememberedDaemon(commands, clock);

    @AfterEach
    void everyScriptedCommandRan() {
        commands.assertAllConsumed();
    }

    @Test
    void aBurstOfStagesAsksOnceWhileTheAnswerIsFresh() {
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 running\n");
        for (int volume = 0; volume < 50; volume++) {
            assertTrue(daemon.isRunning());
            clock.advance(Duration.ofMillis(100));
        }
        commands.expect("multipathd", "show", "daemon").succeeds("pid 812 idle\n");
        clock.advance(RememberedDaemon.RUNNING_KEPT);
        assertTrue(daemon.isRunning(), "an answer older than " + RememberedDaemon.RUNNING_KEPT + " is asked again");
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
    void theFindMultipathsPolicyIsReadOnceAMinute() {
        commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"off\"\n}\n");
        for (int volume = 0; volume < 50; volume++) {
            assertTrue(daemon.takesEveryPath());
            clock.advance(Duration.ofMillis(500));
        }
        commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"strict\"\n}\n");
        clock.advance(RememberedDaemon.CONFIG_KEPT);
        assertFalse(daemon.takesEveryPath(), "a reconfigured daemon is followed a minute later");
    }

    @Test
    void aConfigThatCannotBeReadMeansRegisteringAndIsNotAskedAgainAtOnce() {
        commands.expect("multipathd", "show", "config").timesOut();
        assertFalse(daemon.takesEveryPath());
        assertFalse(daemon.takesEveryPath(), "a busy daemon is not asked for its config once per volume");
        commands.expect("multipathd", "show", "config").fails(1, "error -111 receiving packet");
        clock.advance(RememberedDaemon.CONFIG_KEPT);
        assertFalse(daemon.takesEveryPath());
    }

    @Test
    void aBusyDaemonKeepsTheLastConfigRead() {
        commands.expect("multipathd", "show", "config").succeeds("defaults {\n\tfind_multipaths \"greedy\"\n}\n");
        assertTrue(daemon.takesEveryPath());
        clock.advance(RememberedDaemon.CONFIG_KEPT);
        commands.expect("multipathd", "show", "config").timesOut();
        assertTrue(daemon.takesEveryPath(), "a late answer in a burst changes nothing of the config read before");
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
