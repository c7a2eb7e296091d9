package dev.blocknode.metrics;

import dev.blocknode.outcome.VolumeException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** A failed phase travels with its error, so the RPC layer can count errors by reason. */
class PhasesUnitTest {

    @Test
    void theInnermostFailedPhaseIsTheReasonEvenThroughAWrappingException() {
        IOException cause = new IOException("mkfs.ext4 exited with 1");
        VolumeException wrapped = assertThrows(VolumeException.class, () -> Phases.run("stage", () -> {
            try {
                Phases.run("mkfs", () -> {
                    throw cause;
                });
            } catch (IOException e) {
                throw VolumeException.internal("cannot format /dev/loop7", e);
            }
        }));
        assertEquals(Optional.of("mkfs"), Phases.failedPhase(wrapped));
        assertEquals(Optional.of("mkfs"), Phases.failedPhase(cause));
    }

    @Test
    void anErrorOutsideAnyPhaseHasNoPhase() {
        assertEquals(Optional.empty(), Phases.failedPhase(VolumeException.invalid("volume_id is required")));
    }

    @Test
    void anErrorIsMarkedOnceThoughItLeavesSeveralPhases() {
        IllegalStateException error = new IllegalStateException("boom");
        assertThrows(IllegalStateException.class, () -> Phases.run("outer", () -> Phases.run("inner", () -> {
            throw error;
        })));
        assertEquals(1, error.getSuppressed().length, "one marker, the innermost phase's");
        assertEquals(Optional.of("inner"), Phases.failedPhase(error));
    }
}
