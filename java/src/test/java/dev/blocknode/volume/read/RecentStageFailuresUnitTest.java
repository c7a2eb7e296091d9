package dev.blocknode.volume.read;

import dev.blocknode.outcome.VolumeException;
import org.junit.jupiter.api.Test;

import java.time.Clock;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The memory of failed stages stays bounded; what health makes of a failure is in VolumeHealthUnitTest. */
class RecentStageFailuresUnitTest {

    @Test
    void aCallerCyclingThroughVolumeIdsCannotGrowTheFailuresItIsTold() {
        RecentStageFailures failures = new RecentStageFailures(Clock.systemUTC());
        for (int i = 0; i <= RecentStageFailures.CAPACITY; i++) {
            failures.failed("vol-" + i, VolumeException.precondition("no such LUN"));
        }
        assertTrue(failures.of("vol-0").isEmpty(), "the oldest failure is forgotten first");
        assertTrue(failures.of("vol-" + RecentStageFailures.CAPACITY).isPresent());
    }
}
