package dev.blocknode.state;

import java.io.IOException;
import java.nio.file.Path;

/** A record could not be written because the state dir's filesystem is full; nothing of it was left behind. */
public final class StateDirFullException extends IOException {

    public StateDirFullException(Path directory, IOException cause) {
        super("the state directory " + directory + " is full (" + cause.getMessage() + ")", cause);
    }
}
