package dev.blocknode.os.exec;

import java.io.IOException;

/** A command that could not run, timed out, or (through {@link CommandRunner#runChecked}) exited non-zero. */
public class CommandException extends IOException {

    private final transient Command command;
    private final transient CommandResult result;

    public CommandException(Command command, CommandResult result, String message, Throwable cause) {
        super(message, cause);
        this.command = command;
        this.result = result;
    }

    public Command command() {
        return command;
    }

    /** The result when the command ran to an exit code; null when it never started or timed out. */
    public CommandResult result() {
        return result;
    }

    public static CommandException failed(Command command, CommandResult result) {
        return new CommandException(command, result,
                command.display() + " exited " + result.exitCode() + ": " + result.diagnostic(), null);
    }
}
