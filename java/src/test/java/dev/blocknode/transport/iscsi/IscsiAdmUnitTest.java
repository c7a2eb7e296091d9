package dev.blocknode.transport.iscsi;

import dev.blocknode.os.exec.CommandException;
import dev.blocknode.testing.ScriptedCommandRunner;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * iscsiadm runs against one node database: a record deleted while another run walks it fails that run
 * (exit 6). These pin the rule that keeps the plugin's own runs from doing that to each other.
 */
class IscsiAdmUnitTest {

    private static final IscsiPath A = new IscsiPath("iqn.2024-01.dev.blocknode:t", new Portal("127.0.0.1", 3260),
            "default");
    private static final IscsiPath B = new IscsiPath("iqn.2024-01.dev.blocknode:t", new Portal("127.0.0.2", 3260),
            "default");

    private final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    private final IscsiAdm iscsiadm = new IscsiAdm(commands);
    private final CountDownLatch release = new CountDownLatch(1);
    private final CountDownLatch loginRunning = new CountDownLatch(1);

    @Test
    void aDeletionWaitsForALoginThatIsWalkingTheDatabase() throws Exception {
        commands.expect(argv(A, "--login")).andDo(c -> blockUntilReleased());
        commands.expect(argv(B, "-o", "delete"));
        CompletableFuture<Boolean> login = CompletableFuture.supplyAsync(() -> unchecked(() -> iscsiadm.login(A)));
        assertTrue(loginRunning.await(30, TimeUnit.SECONDS));

        Thread deletion = Thread.ofPlatform().start(() -> unchecked(() -> {
            iscsiadm.deleteNodeRecord(B);
            return null;
        }));
        awaitParked(deletion);
        assertEquals(List.of(String.join(" ", argv(A, "--login"))), commands.commandLines(),
                "the deletion must not run beside the login");

        release.countDown();
        assertTrue(login.get(30, TimeUnit.SECONDS));
        deletion.join(30_000);
        commands.assertAllConsumed();
    }

    @Test
    void runsThatOnlyReadOrAddGoSideBySide() throws Exception {
        commands.expect(argv(A, "--login")).andDo(c -> blockUntilReleased());
        commands.expect(argv(B, "-o", "update", "-n", "node.startup", "-v", "manual"));
        CompletableFuture<Boolean> login = CompletableFuture.supplyAsync(() -> unchecked(() -> iscsiadm.login(A)));
        assertTrue(loginRunning.await(30, TimeUnit.SECONDS));

        iscsiadm.update(B, "node.startup", "manual"); // returns while the login is still in iscsiadm

        release.countDown();
        assertTrue(login.get(30, TimeUnit.SECONDS));
        commands.assertAllConsumed();
    }

    @Test
    void aDatabaseChangedByAnotherIscsiadmIsTriedOnceMore() throws Exception {
        commands.expect(argv(A, "-o", "delete")).fails(IscsiAdm.DATABASE_FAILURE, "iface iter could not stat");
        commands.expect(argv(A, "-o", "delete")).fails(IscsiAdm.NO_OBJECTS_FOUND, "No records found");
        iscsiadm.deleteNodeRecord(A);
        commands.assertAllConsumed();
    }

    @Test
    void aDatabaseThatFailsTwiceIsReported() {
        commands.expect(argv(A, "--logout")).fails(IscsiAdm.DATABASE_FAILURE, "iface iter could not stat");
        commands.expect(argv(A, "--logout")).fails(IscsiAdm.DATABASE_FAILURE, "iface iter could not stat");
        CommandException e = assertThrows(CommandException.class, () -> iscsiadm.logout(A));
        assertEquals(IscsiAdm.DATABASE_FAILURE, e.result().exitCode());
        commands.assertAllConsumed();
    }

    private void blockUntilReleased() throws InterruptedException {
        loginRunning.countDown();
        assertTrue(release.await(30, TimeUnit.SECONDS));
    }

    private static void awaitParked(Thread thread) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (thread.getState() != Thread.State.WAITING) {
            assertTrue(thread.isAlive() && System.nanoTime() < deadline, "the deletion never waited for the database");
            Thread.onSpinWait();
        }
    }

    private static String[] argv(IscsiPath path, String... operation) {
        List<String> argv = new ArrayList<>(List.of("iscsiadm", "-m", "node", "-T", path.iqn(), "-p",
                path.portal().toString(), "-I", path.iface()));
        argv.addAll(List.of(operation));
        return argv.toArray(String[]::new);
    }

    private interface Call<T> {
        T call() throws Exception;
    }

    private static <T> T unchecked(Call<T> call) {
        try {
            return call.call();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
