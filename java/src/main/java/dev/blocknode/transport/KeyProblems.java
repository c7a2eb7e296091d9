package dev.blocknode.transport;

import dev.blocknode.outcome.VolumeException;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What is wrong with a request's keys, all of it: a transport checks every key and records each problem here
 * instead of stopping at the first, so that {@code blocknode pv} can list every problem of a row, and a refused
 * stage names them all in its one INVALID_ARGUMENT.
 */
public final class KeyProblems {

    /** How the keys are read. */
    public enum Reading {
        /** As NodeStageVolume reads them: spellings the plugin normalises (an iqn in capitals) are taken. */
        STAGE,
        /**
         * As a new PersistentVolume should write them ({@code blocknode pv}): in the normal form, since a PV's
         * attributes cannot be edited once it exists.
         */
        NEW_VOLUME
    }

    private final Reading reading;
    private final List<String> found = new ArrayList<>();

    public KeyProblems(Reading reading) {
        this.reading = reading;
    }

    public Reading reading() {
        return reading;
    }

    public void add(String problem) {
        found.add(problem);
    }

    /** One step's check: its value, or empty after recording its INVALID_ARGUMENT message. */
    public <T> Optional<T> check(Step<T> step) throws VolumeException {
        try {
            return Optional.ofNullable(step.run());
        } catch (VolumeException e) {
            if (e.outcome() != VolumeException.Outcome.INVALID_ARGUMENT) {
                throw e;
            }
            found.add(e.getMessage());
            return Optional.empty();
        }
    }

    public boolean isEmpty() {
        return found.isEmpty();
    }

    /** How many problems are recorded: a reader compares it before and after its own keys. */
    public int size() {
        return found.size();
    }

    public List<String> list() {
        return List.copyOf(found);
    }

    /**
     * @throws VolumeException INVALID_ARGUMENT naming every problem found, "; "-separated
     */
    public void throwIfAny() throws VolumeException {
        if (!found.isEmpty()) {
            throw VolumeException.invalid(String.join("; ", found));
        }
    }

    /**
     * The value a reader makes of a request's keys as a stage reads them, or INVALID_ARGUMENT naming every problem it
     * found: what a spec's parse is, over its {@code read(request, problems)}.
     */
    public static <T> T parsed(Reader<T> reader) throws VolumeException {
        KeyProblems problems = new KeyProblems(Reading.STAGE);
        Optional<T> value = reader.read(problems);
        problems.throwIfAny();
        return value.orElseThrow();
    }

    /**
     * {@link Transport#validate} for a transport that checks every key ({@link Transport#check}): INVALID_ARGUMENT
     * naming every problem, as a stage reads the keys.
     */
    public static void requireNone(Transport transport, AttachRequest request) throws VolumeException {
        KeyProblems problems = new KeyProblems(Reading.STAGE);
        transport.check(request, problems);
        problems.throwIfAny();
    }

    /** What reads a request's keys into a value, recording each problem instead of stopping at the first. */
    @FunctionalInterface
    public interface Reader<T> {
        Optional<T> read(KeyProblems problems) throws VolumeException;
    }

    /** A check that answers a value or throws INVALID_ARGUMENT. */
    @FunctionalInterface
    public interface Step<T> {
        T run() throws VolumeException;
    }
}
