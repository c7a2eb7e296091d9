package dev.blocknode.transport.iscsi;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The few iscsiadm operations blocknode needs, as argument arrays with time limits. Node records are
 * created directly (-o new) rather than by SendTargets discovery, so a node never learns of targets
 * that are not its business, and logins never scan: records are set to manual startup and manual scan.
 * No secret is ever passed here: CHAP goes into the record file (see {@link NodeRecordFiles}).
 */
public class IscsiAdm {

    /** iscsiadm's exit statuses that are answers rather than failures (open-iscsi's iscsi_err.h). */
    static final int SESSION_EXISTS = 15;
    static final int NO_OBJECTS_FOUND = 21;
    static final int LOGIN_AUTH_FAILED = 24;

    private static final Duration RECORD_TIMEOUT = Duration.ofSeconds(30);
    /** Above open-iscsi's default login timeout (15 s) times its retries, so iscsiadm reports first. */
    private static final Duration LOGIN_TIMEOUT = Duration.ofSeconds(75);

    private final CommandRunner commands;

    public IscsiAdm(CommandRunner commands) {
        this.commands = commands;
    }

    /** Creates the node record (idempotent) and makes it manual: no automatic login, no automatic scan. */
    public void createNodeRecord(IscsiPath path) throws CommandException {
        CommandResult created = commands.run(node(path, "-o", "new").withTimeout(RECORD_TIMEOUT));
        if (!created.succeeded() && created.exitCode() != SESSION_EXISTS) {
            throw CommandException.failed(node(path, "-o", "new"), created);
        }
        update(path, "node.startup", "manual");
        update(path, "node.session.scan", "manual");
    }

    /** Sets one non-secret setting of the record. */
    public void update(IscsiPath path, String key, String value) throws CommandException {
        commands.runChecked(node(path, "-o", "update", "-n", key, "-v", value).withTimeout(RECORD_TIMEOUT));
    }

    /** @return false when a session already existed */
    public boolean login(IscsiPath path) throws CommandException {
        Command login = node(path, "--login").withTimeout(LOGIN_TIMEOUT);
        CommandResult result = commands.run(login);
        if (result.exitCode() == SESSION_EXISTS) {
            return false;
        }
        if (!result.succeeded()) {
            throw CommandException.failed(login, result);
        }
        return true;
    }

    /** @return false when there was no session to log out of */
    public boolean logout(IscsiPath path) throws CommandException {
        Command logout = node(path, "--logout").withTimeout(LOGIN_TIMEOUT);
        CommandResult result = commands.run(logout);
        if (result.exitCode() == NO_OBJECTS_FOUND) {
            return false;
        }
        if (!result.succeeded()) {
            throw CommandException.failed(logout, result);
        }
        return true;
    }

    public void deleteNodeRecord(IscsiPath path) throws CommandException {
        Command delete = node(path, "-o", "delete").withTimeout(RECORD_TIMEOUT);
        CommandResult result = commands.run(delete);
        if (!result.succeeded() && result.exitCode() != NO_OBJECTS_FOUND) {
            throw CommandException.failed(delete, result);
        }
    }

    static boolean isAuthenticationFailure(CommandException e) {
        return e.result() != null && e.result().exitCode() == LOGIN_AUTH_FAILED;
    }

    private static Command node(IscsiPath path, String... operation) {
        List<String> argv = new ArrayList<>(List.of("iscsiadm", "-m", "node", "-T", path.iqn(),
                "-p", path.portal().toString(), "-I", path.iface()));
        argv.addAll(List.of(operation));
        return new Command(argv, Command.DEFAULT_TIMEOUT, null);
    }
}
