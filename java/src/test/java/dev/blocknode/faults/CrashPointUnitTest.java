package dev.blocknode.faults;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CrashPointUnitTest {

    private static final Set<String> OPERATIONS = Set.of("stage", "publish", "unpublish", "unstage", "expand");

    @Test
    void everyStepHasAUniqueNameOfItsOperation() {
        Set<String> names = Arrays.stream(CrashPoint.values()).map(CrashPoint::step).collect(Collectors.toSet());
        assertEquals(CrashPoint.values().length, names.size(), "step names are unique");
        for (String name : names) {
            assertTrue(name.matches("[a-z]+\\.[a-z]+(-[a-z]+)*"), name);
            assertTrue(OPERATIONS.contains(name.substring(0, name.indexOf('.'))), name);
        }
        assertEquals(OPERATIONS, names.stream().map(n -> n.substring(0, n.indexOf('.'))).collect(Collectors.toSet()),
                "every operation has crash points");
    }

    @Test
    void stepsAreFoundByTheirNameOnly() {
        for (CrashPoint point : CrashPoint.values()) {
            assertEquals(Optional.of(point), CrashPoint.byStep(point.step()));
        }
        assertEquals(Optional.empty(), CrashPoint.byStep("stage.atached"));
        assertEquals(Optional.empty(), CrashPoint.byStep("STAGE_ATTACHED"));
    }

    @Test
    void unarmedTheyDoNothing() {
        // The test JVM has no BLOCKNODE_* variables: reaching every point returns, and nothing is armed.
        for (CrashPoint point : CrashPoint.values()) {
            CrashPoints.reach(point);
        }
        assertEquals(Optional.empty(), CrashPoints.checkEnvironment());
    }
}
