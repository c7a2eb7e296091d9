package dev.blocknode.testing;

import dev.blocknode.transport.iscsi.IscsiTransport;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Figure l's burst (test-e2e/bench) for what it does, never for time: N volumes staged at once by the real iSCSI
 * transport, one thread each, then unstaged at once, over a fabricated node. Every volume gets its own two-path map,
 * every command the burst expects runs and none other, nothing waits, and nothing is left: no session, disk, map,
 * node record, journal entry or staging record.
 */
class IscsiStageBurstUnitTest {

    private static final int VOLUMES = 8;

    @TempDir
    Path temp;

    @ParameterizedTest
    @EnumSource(StagedIscsiNode.Targets.class)
    void stagesAndUnstagesEveryVolumeAtOnceAndLeavesNothing(StagedIscsiNode.Targets targets) throws Exception {
        IscsiStageBurst burst = IscsiStageBurst.fabricate(temp, VOLUMES, targets);
        ManualClock clock = new ManualClock();
        IscsiTransport transport = burst.transport(burst.commands(), burst.sysfs(), clock.waiter());

        IscsiStageBurst.Timing staged = burst.stageAll(transport);

        assertEquals(VOLUMES, staged.perVolumeNanos().length);
        assertEquals(2 * VOLUMES, burst.sysfs().diskNames().size(), "two paths a volume");
        long maps = burst.leftovers().stream().filter(l -> l.startsWith("map: ")).count();
        assertEquals(VOLUMES, maps, "a map a volume");
        int sessions = targets == StagedIscsiNode.Targets.SHARED ? 2 : 2 * VOLUMES;
        assertEquals(sessions, burst.leftovers().stream().filter(l -> l.startsWith("session: ")).count(),
                "one login per portal of each target, shared by its volumes");

        burst.unstageAll(transport);

        assertEquals(List.of(), burst.leftovers(), "the drain leaves nothing");
        burst.commands().assertAllConsumed(); // every expected command ran, and no other
        assertEquals(0, clock.pauses(), "the fabricated kernel answers at once: no wait had to wait");
        assertTrue(burst.commands().commandLines().stream().noneMatch(c -> c.startsWith("multipath -a")),
                "a daemon that takes every path registers the WWIDs itself");
    }
}
