package dev.blocknode.transport.iscsi;

import dev.blocknode.logging.LogContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;

/**
 * Runs one task per portal of a volume. {@link #AT_ONCE} is the plugin's: a volume's portals are independent
 * sessions on SCSI hosts of their own, so the second portal's login and targeted scan need not wait behind the
 * first's (in a burst the first portal's scans queue behind other volumes' on its host, and the second
 * portal's login then waited for that too). The bound is the volume's portal count; each task keeps its own
 * timeouts. {@link #IN_TURN} runs them one after another, for tests that script commands in order.
 *
 * <p>Every task has finished when {@link #each} returns, whatever happened: the caller's cleanup of failed
 * portals needs to see every outcome. An interrupt of the caller interrupts the tasks, waits for them, and
 * is kept on the caller's thread.
 */
enum PortalFanOut {

    AT_ONCE,
    IN_TURN;

    /** The task's results, in the order of {@code paths}. A task must report its failures as a result. */
    <T> List<T> each(List<IscsiPath> paths, Function<IscsiPath, T> task) {
        List<T> results = new ArrayList<>();
        if (this == IN_TURN || paths.size() < 2) {
            for (IscsiPath path : paths) {
                results.add(task.apply(path));
            }
            return results;
        }
        Optional<LogContext.Operation> operation = LogContext.current();
        List<Future<T>> running = new ArrayList<>();
        try (ExecutorService threads = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("blocknode-iscsi-portal-", 0).factory())) {
            for (IscsiPath path : paths) {
                running.add(threads.submit(() -> {
                    // The volume's log lines from the portal's thread carry the operation as the caller's do.
                    try (LogContext.Scope ignored = operation.map(LogContext::enter).orElse(() -> { })) {
                        return task.apply(path);
                    }
                }));
            }
        } // close() waits for every task (an interrupt stops them, still waits, and is re-asserted)
        for (Future<T> future : running) {
            try {
                results.add(future.resultNow());
            } catch (IllegalStateException notCompleted) {
                throw new IllegalStateException("a portal's task ended without a result", failure(future));
            }
        }
        return results;
    }

    private static Throwable failure(Future<?> future) {
        try {
            future.get();
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (InterruptedException | RuntimeException e) {
            return e;
        }
    }
}
