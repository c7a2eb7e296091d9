package dev.blocknode.csi.server;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Moves each call from the transport's event loop to a thread of {@code executor} once, at the point where
 * the service's code starts to run. The server runs gRPC's own steps (method lookup, interceptors, reading
 * the request) directly on the event loop; gRPC's default would instead hop between the event loop and the
 * executor at each of them (start, request, message, half-close), every hop a wake-up of another thread,
 * which was most of what an empty call cost.
 *
 * <p>For a unary method the hop comes at half-close, where the request is complete and the method is
 * invoked: the method, which may block on syscalls and commands, never runs on the event loop. Any other
 * kind of method (a proxy's, say) hops at its first callback. After the hop every callback of the call runs
 * in order through one queue, as gRPC's own executor wrapping does, so they never run concurrently.
 *
 * <p>A unary call's last callback (onComplete, or onCancel once its handler has answered) runs on the event loop
 * when no call thread is running the call's queue, instead of waking one more time: it is gRPC's own bookkeeping
 * (the unary listener sets a flag; no handler of ours hooks it, no interceptor of ours overrides it). Waking a
 * call thread for it was a second thread wake-up per call, right when the caller's answer was being written.
 *
 * <p>A few methods whose answer is built from memory (the plugin's name and capabilities, the node's id, the
 * latest health check) never hop: on the event loop they answer in microseconds, where a hop would cost a
 * thread wake-up each.
 *
 * <p>It must be the innermost interceptor, so that the Context it carries across (request id, deadline,
 * cancellation) is the one the other interceptors set up.
 */
final class Offloading implements ServerInterceptor {

    private static final Logger LOG = Logger.getLogger(Offloading.class.getName());

    private final Executor executor;
    private final Set<String> answeredOnEventLoop;

    /**
     * @param answeredOnEventLoop full names of unary methods that stay on the event loop: only those whose
     *                            answer is built from memory, never waiting on a disk, a device, a lock or a
     *                            command (a stuck one would stall every call on the socket)
     */
    Offloading(Executor executor, Set<String> answeredOnEventLoop) {
        this.executor = executor;
        this.answeredOnEventLoop = Set.copyOf(answeredOnEventLoop);
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
                                                       ServerCallHandler<Q, A> next) {
        boolean unary = call.getMethodDescriptor().getType() == MethodDescriptor.MethodType.UNARY;
        if (unary && answeredOnEventLoop.contains(call.getMethodDescriptor().getFullMethodName())) {
            // Waking a call thread costs more than such an answer does (see the class comment).
            return next.startCall(call, headers);
        }
        if (!unary) {
            // Start it on the executor too: a streaming handler may already block in startCall.
            OffloadedListener<Q> listener = new OffloadedListener<>(call, executor, null, false);
            listener.run(() -> listener.delegate = next.startCall(call, headers));
            return listener;
        }
        return new OffloadedListener<>(call, executor, next.startCall(call, headers), true);
    }

    /** The call's listener: inline on the event loop until the hop, then through one ordered queue. */
    private static final class OffloadedListener<Q> extends ServerCall.Listener<Q> {
        private final ServerCall<Q, ?> call;
        private final Executor executor;
        private final Queue<Runnable> queue = new ConcurrentLinkedQueue<>();
        private final AtomicBoolean draining = new AtomicBoolean();
        /** Set before the first queued task runs (a streaming call's startCall), read by later ones. */
        private volatile ServerCall.Listener<Q> delegate;
        /** Only read and written by gRPC's callbacks, which come one at a time from the event loop. */
        private boolean offloaded;
        /** Not unary: every callback goes through the queue (a streaming handler's may block). */
        private final boolean streaming;

        OffloadedListener(ServerCall<Q, ?> call, Executor executor, ServerCall.Listener<Q> delegate,
                          boolean unary) {
            this.call = call;
            this.executor = executor;
            this.delegate = delegate;
            this.streaming = !unary;
            this.offloaded = streaming; // a unary call hops at its half-close, any other from its start
        }

        @Override
        public void onMessage(Q message) {
            route(() -> delegate.onMessage(message));
        }

        @Override
        public void onHalfClose() {
            offloaded = true;
            route(() -> delegate.onHalfClose());
        }

        @Override
        public void onCancel() {
            finish(() -> delegate.onCancel());
        }

        @Override
        public void onComplete() {
            finish(() -> delegate.onComplete());
        }

        @Override
        public void onReady() {
            route(() -> delegate.onReady());
        }

        /**
         * A unary call's last callback: run here, on the event loop, when the call thread is done with the call
         * (see the class comment); queued behind it when it is not, so callbacks still never overlap. Only the
         * event loop queues callbacks, so while it holds the flag nothing can be queued behind this one.
         */
        private void finish(Runnable callback) {
            if (offloaded && !streaming && draining.compareAndSet(false, true)) {
                try {
                    callback.run();
                } finally {
                    draining.set(false);
                }
            } else {
                route(callback);
            }
        }

        private void route(Runnable callback) {
            if (offloaded) {
                run(callback);
            } else {
                callback.run();
            }
        }

        /** Queues {@code callback} with the current Context; starts draining the queue if nobody does. */
        void run(Runnable callback) {
            queue.add(Context.current().wrap(callback));
            if (draining.compareAndSet(false, true)) {
                try {
                    executor.execute(this::drain);
                } catch (RejectedExecutionException shuttingDown) {
                    draining.set(false);
                    queue.clear();
                    closeQuietly(Status.UNAVAILABLE.withDescription("the plugin is shutting down"));
                }
            }
        }

        private void drain() {
            do {
                Runnable next;
                while ((next = queue.poll()) != null) {
                    try {
                        next.run();
                    } catch (RuntimeException | Error e) {
                        // An Error too (a LinkageError, a StackOverflowError, an AssertionError): uncaught, it
                        // would end this thread with the call never closed, its caller waiting to its deadline.
                        LOG.log(Level.SEVERE, "call " + call.getMethodDescriptor().getFullMethodName()
                                + " failed outside its handler", e);
                        closeQuietly(Status.UNKNOWN.withDescription("internal error").withCause(e));
                        if (e instanceof VirtualMachineError fatal && !(fatal instanceof StackOverflowError)) {
                            throw fatal; // out of memory, an internal error of the JVM: not this call's alone
                        }
                    }
                }
                draining.set(false);
                // A callback queued after the poll above but before the flag fell finds nobody draining
                // only if this thread does not take the flag back.
            } while (!queue.isEmpty() && draining.compareAndSet(false, true));
        }

        private void closeQuietly(Status status) {
            try {
                call.close(status, new Metadata());
            } catch (RuntimeException alreadyClosed) {
                // the call was closed before the failure: nothing left to tell the caller
            }
        }
    }
}
