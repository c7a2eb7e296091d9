package dev.blocknode.state;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A volume's staging record file that exists but cannot be used: corrupt, of a newer format, not a regular
 * file, too large, or not readable. The store remembers it (never drops it) and refuses its volume only; the
 * message names the file and says why.
 */
public final class UnreadableRecordException extends IOException {

    private static final long serialVersionUID = 1L;

    private final transient Path file;

    UnreadableRecordException(Path file, String message, Throwable cause) {
        super(message, cause);
        this.file = file;
    }

    /** The record file. */
    public Path file() {
        return file;
    }

    /** The same failure, thrown again from here (a fresh stack trace for the caller that meets it). */
    UnreadableRecordException again() {
        return new UnreadableRecordException(file, getMessage(), this);
    }
}
