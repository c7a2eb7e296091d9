package dev.blocknode.faults;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Test-only fault injection at the lifecycle's {@link CrashPoint}s, armed by environment variables read
 * once at start; unarmed (production), {@link #reach} is a test of a constant the JIT removes.
 * <ul>
 *   <li>{@value #CRASH_AT}=step: at that step the process dies at once ({@link Runtime#halt}: no shutdown
 *       hooks, no cleanup, as after kill -9 or a power cut) with exit code {@value #EXIT_CODE}.</li>
 *   <li>{@value #PAUSE_AT}=step with {@value #PAUSE_GATE}=a FIFO: the first time the step is reached, the
 *       operation blocks (holding its volume) until the test writes to the FIFO and closes it. This stands
 *       in for a slow mkfs or SAN, to make an operation outlive its caller's deadline.</li>
 * </ul>
 * Each event is announced on standard error, so that the test can tell the step was really reached.
 */
public final class CrashPoints {

    public static final String CRASH_AT = "BLOCKNODE_CRASH_AT";
    public static final String PAUSE_AT = "BLOCKNODE_PAUSE_AT";
    public static final String PAUSE_GATE = "BLOCKNODE_PAUSE_GATE";
    /** The exit code of a process killed at a crash point (not one the JVM or a signal would give). */
    public static final int EXIT_CODE = 86;

    private static final String CRASH_STEP = System.getenv(CRASH_AT);
    private static final String PAUSE_STEP = System.getenv(PAUSE_AT);
    private static final String GATE = System.getenv(PAUSE_GATE);
    private static final Optional<CrashPoint> CRASH = parse(CRASH_STEP);
    private static final Optional<CrashPoint> PAUSE = parse(PAUSE_STEP);
    private static final boolean ARMED = CRASH.isPresent() || (PAUSE.isPresent() && GATE != null);
    private static final AtomicBoolean PAUSED_ONCE = new AtomicBoolean();

    private CrashPoints() {
    }

    /** Dies or pauses here when a test armed this point; otherwise nothing. */
    public static void reach(CrashPoint point) {
        if (!ARMED) {
            return;
        }
        if (CRASH.isPresent() && CRASH.get() == point) {
            System.err.println("blocknode: crash point " + point + " reached: halting");
            System.err.flush();
            Runtime.getRuntime().halt(EXIT_CODE);
        }
        if (PAUSE.isPresent() && PAUSE.get() == point && PAUSED_ONCE.compareAndSet(false, true)) {
            System.err.println("blocknode: crash point " + point + " reached: pausing until " + GATE + " opens");
            try (InputStream gate = Files.newInputStream(Path.of(GATE))) {
                gate.readAllBytes(); // opening a FIFO blocks until the test opens it to write; EOF when it closes
            } catch (IOException e) {
                System.err.println("blocknode: pause gate " + GATE + " failed (" + e.getMessage() + "); resuming");
            }
            System.err.println("blocknode: crash point " + point + ": resumed");
        }
    }

    /**
     * Refuses an environment that names a step which does not exist, so that a typo cannot quietly test
     * nothing; describes what is armed.
     *
     * @return a line for the log when a point is armed
     * @throws IllegalArgumentException naming the unknown step
     */
    public static Optional<String> checkEnvironment() {
        requireKnown(CRASH_AT, CRASH_STEP);
        requireKnown(PAUSE_AT, PAUSE_STEP);
        if (PAUSE_STEP != null && GATE == null) {
            throw new IllegalArgumentException(PAUSE_AT + " needs " + PAUSE_GATE + " (a FIFO to wait on)");
        }
        if (!ARMED) {
            return Optional.empty();
        }
        return Optional.of("TEST FAULT INJECTION ARMED: " + CRASH.map(p -> "halt at " + p).orElse("")
                + PAUSE.map(p -> " pause at " + p).orElse(""));
    }

    private static void requireKnown(String variable, String step) {
        if (step != null && parse(step).isEmpty()) {
            throw new IllegalArgumentException(variable + "=" + step + " names no crash point; known: "
                    + Arrays.stream(CrashPoint.values()).map(CrashPoint::step).toList());
        }
    }

    private static Optional<CrashPoint> parse(String step) {
        return step == null ? Optional.empty() : CrashPoint.byStep(step.strip());
    }
}
