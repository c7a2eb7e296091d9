package dev.blocknode.faults;

import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
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

    /**
     * The host tier's crash matrix leaves an encrypted volume's points out (no dm-crypt there): the VM tier's
     * iscsi-crash must crash at each of them, or nothing would.
     */
    @Test
    void theVmCrashMatrixCrashesAtEveryCryptPoint() throws IOException {
        String script = Files.readString(GeneratedDocs.repositoryRoot().resolve("test-e2e/vm/guest/iscsi-crash.sh"));
        List<String> crashed = Arrays.stream(script.split("\n")).filter(l -> l.startsWith("step "))
                .flatMap(l -> Arrays.stream(l.split("\\s+"))).toList();
        List<CrashPoint> crypt = Arrays.stream(CrashPoint.values()).filter(p -> p.name().contains("_CRYPT_")).toList();
        assertEquals(3, crypt.size(), crypt.toString());
        for (CrashPoint point : crypt) {
            assertTrue(crashed.contains(point.step()), "iscsi-crash.sh has no crash_cycle step at " + point);
        }
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
