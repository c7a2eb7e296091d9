package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.Transport;
import dev.blocknode.volume.filesystem.FilesystemType;

import java.util.List;
import java.util.Optional;

/**
 * Who reads a stage request's keys ({@link StageRequestRules#read}), and so how. A stage stops at the first problem
 * (its one refusal), knows its secrets and the node's default filesystem. {@code blocknode pv} names every problem,
 * reads the keys as a new PersistentVolume should write them ({@link KeyProblems.Reading#NEW_VOLUME}) and knows of
 * the secrets only whether the PV names a Secret: the same steps in the same order, so the two cannot drift.
 */
final class StageKeyReading {

    /** Empty for a stage, which stops at the first problem. */
    private final Optional<KeyProblems> every;
    private final Optional<FilesystemType> nodeDefault;
    private final boolean secretsAsAtStage;

    private StageKeyReading(Optional<KeyProblems> every, Optional<FilesystemType> nodeDefault,
                            boolean secretsAsAtStage) {
        this.every = every;
        this.nodeDefault = nodeDefault;
        this.secretsAsAtStage = secretsAsAtStage;
    }

    /** A stage's: the first problem is thrown; a mount naming no fs_type formats as {@code nodeDefault}. */
    static StageKeyReading stage(FilesystemType nodeDefault) {
        return new StageKeyReading(Optional.empty(), Optional.of(nodeDefault), true);
    }

    /**
     * {@code blocknode pv}'s: every problem is recorded. A PV's request carries no secrets, which is what its stage
     * gets exactly when it names no Secret; when it names one, the passphrase in it cannot be checked here.
     */
    static StageKeyReading newVolume(boolean secretNamed) {
        return new StageKeyReading(Optional.of(new KeyProblems(KeyProblems.Reading.NEW_VOLUME)), Optional.empty(),
                !secretNamed);
    }

    /**
     * One step's value; for {@code blocknode pv}, empty after recording why it failed (any refusal: a fencing that
     * cannot be met too).
     *
     * @throws VolumeException a stage's first problem
     */
    <T> Optional<T> step(KeyProblems.Step<T> step) throws VolumeException {
        if (every.isEmpty()) {
            return Optional.ofNullable(step.run());
        }
        try {
            return Optional.ofNullable(step.run());
        } catch (VolumeException e) {
            every.get().add(e.getMessage());
            return Optional.empty();
        }
    }

    /**
     * The transport's own keys: a stage's {@link Transport#validate}, whose plan the attach takes, or every problem of
     * {@link Transport#check} (no plan: {@code blocknode pv} attaches nothing).
     */
    Optional<AttachPlan> checkTransportKeys(Transport transport, AttachRequest request) throws VolumeException {
        if (every.isEmpty()) {
            return Optional.of(transport.validate(request));
        }
        transport.check(request, every.get());
        return Optional.empty();
    }

    /** The filesystem a blank device gets when the request names none: empty when the node is not known. */
    Optional<FilesystemType> nodeDefault() {
        return nodeDefault;
    }

    /** Whether the request's secrets are those its stage gets, so that its passphrase can be read. */
    boolean secretsAsAtStage() {
        return secretsAsAtStage;
    }

    /** Every problem recorded ({@code blocknode pv}); none for a stage, which threw its first. */
    List<String> problems() {
        return every.map(KeyProblems::list).orElse(List.of());
    }
}
