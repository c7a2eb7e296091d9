package dev.blocknode.os.exec;

/**
 * The one way blocknode runs an external program. The real implementation is {@link ProcessCommandRunner};
 * tests use a scripted fake that states exactly which commands must run, in which order.
 */
public interface CommandRunner {

    /** Runs the command to completion; a non-zero exit is a result, not an exception. */
    CommandResult run(Command command) throws CommandException;

    /** Runs the command and turns a non-zero exit into a {@link CommandException} quoting its output. */
    default CommandResult runChecked(Command command) throws CommandException {
        CommandResult result = run(command);
        if (!result.succeeded()) {
            throw CommandException.failed(command, result);
        }
        return result;
    }
}
