package dev.blocknode.csi.server;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads that calls run on once {@link Offloading} moves them off the event loop: platform threads,
 * as many as there are calls at once, idle ones kept for a while.
 *
 * <p>Not virtual threads, though they were the first choice: the plugin's calls are made of file-system
 * system calls (stat, mkdir, mount, writes), and every blocking file operation the JDK makes on a virtual
 * thread first compensates the scheduler (it wakes or starts another carrier thread, which finds nothing
 * to do and parks again). A publish + unpublish cycle cost 750-900 us of CPU on virtual threads and
 * 625-650 us on these (test-e2e/bench, figure a), with fewer context switches; a node's calls at once are
 * bounded by what kubelet runs in parallel (tens), which platform threads carry without trouble.
 */
final class CallThreads {

    /** Reserved, not committed: deep stacks (a cause chain being logged, say) must not overflow -Xss256k. */
    private static final long STACK_BYTES = 1L << 20;
    private static final int KEPT_IDLE = 2;
    private static final long IDLE_SECONDS = 30;

    private CallThreads() {
    }

    static ExecutorService newPool() {
        AtomicInteger count = new AtomicInteger();
        ThreadFactory factory = runnable -> {
            Thread thread = new Thread(null, runnable, "csi-call-" + count.incrementAndGet(), STACK_BYTES);
            thread.setDaemon(true);
            return thread;
        };
        // A SynchronousQueue hands each call to an idle thread or a new one: calls never wait behind others.
        return new ThreadPoolExecutor(KEPT_IDLE, Integer.MAX_VALUE, IDLE_SECONDS, TimeUnit.SECONDS,
                new SynchronousQueue<>(), factory);
    }
}
