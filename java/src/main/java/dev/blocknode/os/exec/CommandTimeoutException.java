package dev.blocknode.os.exec;

/** The command outlived its time limit and was killed (with its whole process tree). */
public final class CommandTimeoutException extends CommandException {

    public CommandTimeoutException(Command command) {
        super(command, null, command.display() + " timed out after " + command.timeout().toMillis() + " ms", null);
    }
}
