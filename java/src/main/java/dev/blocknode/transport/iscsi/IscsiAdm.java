package dev.blocknode.transport.iscsi;

import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.logging.Logger;

/**
 * The few iscsiadm operations blocknode needs, as argument arrays with time limits. Node records are
 * created directly (-o new) rather than by SendTargets discovery, so a node never learns of targets
 * that are not its business, and logins never scan: records are set to manual startup and manual scan.
 * No secret is ever passed here: CHAP goes into the record file (see {@link NodeRecordFiles}).
 *
 * <p>Every {@code iscsiadm -m node} run, whatever its target and portal, walks the node's whole record
 * database, and a record deleted during that walk makes it fail with ISCSI_ERR_IDBM (open-iscsi's
 * idbm_for_each_rec stats each entry after its readdir, outside its own lock). Two volumes unstaging
 * at once, or one logging in while another deletes a record, hit that. So a deletion runs alone and
 * every other run shares the database: one instance serves the whole plugin.
 */
public class IscsiAdm {

    private static final Logger LOG = Logger.getLogger(IscsiAdm.class.getName());

    /** A walk of the node database that met a changing entry (open-iscsi's iscsi_err.h): run once more. */
    static final int DATABASE_FAILURE = 6;
    /** iscsiadm's exit statuses that are answers rather than failures (iscsi_err.h). */
    static final int SESSION_EXISTS = 15;
    static final int NO_OBJECTS_FOUND = 21;
    static final int LOGIN_AUTH_FAILED = 24;

    private static final Duration RECORD_TIMEOUT = Duration.ofSeconds(30);
    /** Above open-iscsi's default login timeout (15 s) times its retries, so iscsiadm reports first. */
    private static final Duration LOGIN_TIMEOUT = Duration.ofSeconds(75);

    private final CommandRunner commands;
    private final ReentrantReadWriteLock database = new ReentrantReadWriteLock();

    public IscsiAdm(CommandRunner commands) {
        this.commands = commands;
    }

    /**
     * Creates the node record (idempotent) with iscsid.conf's defaults; the caller makes it manual (no automatic login,
     * no automatic scan: {@link NodeRecordFiles#MANUAL}) before its first login.
     */
    public void createNodeRecord(IscsiPath path) throws CommandException {
        Command create = node(path, "-o", "new").withTimeout(RECORD_TIMEOUT);
        CommandResult created = walk(create);
        if (!created.succeeded() && created.exitCode() != SESSION_EXISTS) {
            throw CommandException.failed(create, created);
        }
    }

    /** Sets one non-secret setting of the record. */
    public void update(IscsiPath path, String key, String value) throws CommandException {
        Command update = node(path, "-o", "update", "-n", key, "-v", value).withTimeout(RECORD_TIMEOUT);
        CommandResult result = walk(update);
        if (!result.succeeded()) {
            throw CommandException.failed(update, result);
        }
    }

    /** @return false when a session already existed */
    public boolean login(IscsiPath path) throws CommandException {
        Command login = node(path, "--login").withTimeout(LOGIN_TIMEOUT);
        CommandResult result = walk(login);
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
        CommandResult result = walk(logout);
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
        CommandResult result = run(delete, database.writeLock());
        if (!result.succeeded() && result.exitCode() != NO_OBJECTS_FOUND) {
            throw CommandException.failed(delete, result);
        }
    }

    static boolean isAuthenticationFailure(CommandException e) {
        return e.result() != null && e.result().exitCode() == LOGIN_AUTH_FAILED;
    }

    /** A run that reads the database (and may add to it) beside other such runs, never beside a deletion. */
    private CommandResult walk(Command command) throws CommandException {
        return run(command, database.readLock());
    }

    /**
     * Runs under the given side of the database lock. A database failure is tried once more: an iscsiadm
     * outside the plugin (an operator's) can still delete a record under a walk of ours. Every operation
     * here is one a second run completes or answers (a record that exists, a session that exists, nothing
     * to log out of), so the repeat is safe.
     */
    private CommandResult run(Command command, Lock access) throws CommandException {
        access.lock();
        try {
            CommandResult result = commands.run(command);
            if (result.exitCode() == DATABASE_FAILURE) {
                LOG.info(() -> "iscsiadm " + operationOf(command) + " found the node database changing under it"
                        + " (exit " + DATABASE_FAILURE + "); running it once more");
                result = commands.run(command);
            }
            return result;
        } finally {
            access.unlock();
        }
    }

    private static String operationOf(Command command) {
        List<String> argv = command.argv();
        return String.join(" ", argv.subList(argv.indexOf("-I") + 2, argv.size()));
    }

    private static Command node(IscsiPath path, String... operation) {
        List<String> argv = new ArrayList<>(List.of("iscsiadm", "-m", "node", "-T", path.iqn(),
                "-p", path.portal().toString(), "-I", path.iface()));
        argv.addAll(List.of(operation));
        return new Command(argv, Command.DEFAULT_TIMEOUT, null);
    }
}
