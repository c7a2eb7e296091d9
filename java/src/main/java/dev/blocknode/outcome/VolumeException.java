package dev.blocknode.outcome;

/**
 * Why a volume operation did not succeed, in the outcome vocabulary the CSI spec gives node plugins.
 * The csi layer maps each {@link Outcome} to its gRPC status code; the message is for an operator and
 * names the field, path or device concerned.
 */
public class VolumeException extends Exception {

    public enum Outcome {
        /** The request itself is wrong; retrying it unchanged cannot help. */
        INVALID_ARGUMENT,
        /** The volume, device or path named does not exist. */
        NOT_FOUND,
        /** The volume is already there with other, incompatible arguments. */
        ALREADY_EXISTS,
        /** The node is not in a state where this can be done (not staged, still published, data found...). */
        FAILED_PRECONDITION,
        /** Another operation on this volume is running; try again later. */
        ABORTED,
        /** A requested capacity cannot be met. */
        OUT_OF_RANGE,
        /**
         * The node ran out of something it needs (a full state dir). Not final for kubelet, which then keeps
         * the volume as possibly staged and still tears it down: right when part of a stage may be in place.
         */
        RESOURCE_EXHAUSTED,
        /** Something on the host failed; the message says what and on which device. */
        INTERNAL
    }

    private final Outcome outcome;

    public VolumeException(Outcome outcome, String message) {
        this(outcome, message, null);
    }

    public VolumeException(Outcome outcome, String message, Throwable cause) {
        super(message, cause);
        this.outcome = outcome;
    }

    public Outcome outcome() {
        return outcome;
    }

    public static VolumeException invalid(String message) {
        return new VolumeException(Outcome.INVALID_ARGUMENT, message);
    }

    public static VolumeException notFound(String message) {
        return new VolumeException(Outcome.NOT_FOUND, message);
    }

    public static VolumeException alreadyExists(String message) {
        return new VolumeException(Outcome.ALREADY_EXISTS, message);
    }

    public static VolumeException precondition(String message) {
        return new VolumeException(Outcome.FAILED_PRECONDITION, message);
    }

    public static VolumeException exhausted(String message, Throwable cause) {
        String detail = cause == null || cause.getMessage() == null ? message : message + ": " + cause.getMessage();
        return new VolumeException(Outcome.RESOURCE_EXHAUSTED, detail, cause);
    }

    public static VolumeException internal(String message, Throwable cause) {
        String detail = cause == null || cause.getMessage() == null ? message : message + ": " + cause.getMessage();
        return new VolumeException(Outcome.INTERNAL, detail, cause);
    }
}
