package dev.blocknode.csi.server;

import dev.blocknode.testing.InertServerCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Where each callback of a call runs: the test thread plays the event loop, and the executor only queues the
 * tasks it is given, which the test runs when it chooses (a call thread's timing, made explicit).
 */
class OffloadingUnitTest {

    private final Queue<Runnable> callThreadTasks = new ArrayDeque<>();
    private final Executor executor = callThreadTasks::add;
    private final List<String> ran = new CopyOnWriteArrayList<>();

    @Test
    void aUnaryCallHopsOnceAndItsCompletionStaysOnTheEventLoop() {
        ServerCall.Listener<String> listener = startUnary();
        listener.onMessage("request");
        listener.onHalfClose();
        assertEquals(List.of("message on event loop"), ran, "nothing but the request is read before the hop");
        assertEquals(1, callThreadTasks.size());

        runCallThread();
        listener.onComplete();

        assertEquals(List.of("message on event loop", "halfClose on call thread", "complete on event loop"), ran);
        assertEquals(0, callThreadTasks.size(), "no second wake-up of a call thread for the completion");
    }

    @Test
    void aCompletionThatArrivesWhileTheCallThreadStillRunsWaitsBehindIt() {
        ServerCall.Listener<String> listener = startUnary();
        listener.onMessage("request");
        listener.onHalfClose();
        listener.onComplete(); // the answer was written before the call thread drained its queue
        listener.onCancel();

        assertEquals(List.of("message on event loop"), ran);
        runCallThread();
        assertEquals(List.of("message on event loop", "halfClose on call thread", "complete on call thread",
                "cancel on call thread"), ran);
    }

    @Test
    void aCancelBeforeTheRequestIsCompleteStaysOnTheEventLoop() {
        ServerCall.Listener<String> listener = startUnary();
        listener.onCancel();

        assertEquals(List.of("cancel on event loop"), ran);
        assertEquals(0, callThreadTasks.size());
    }

    @Test
    void aStreamingCallRunsEveryCallbackOnTheCallThread() {
        ServerCall.Listener<String> listener = start(MethodDescriptor.MethodType.BIDI_STREAMING);
        listener.onMessage("request");
        listener.onComplete();

        runCallThread();
        assertEquals(List.of("message on call thread", "complete on call thread"), ran);
    }

    @Test
    void aMethodAnsweredFromMemoryNeverHops() {
        Offloading offloading = new Offloading(executor, Set.of("test/Unary"));
        ServerCall.Listener<String> listener = offloading.interceptCall(call(MethodDescriptor.MethodType.UNARY), new Metadata(), (call, headers) -> new Recorder());
        listener.onHalfClose();
        listener.onComplete();

        assertEquals(List.of("halfClose on event loop", "complete on event loop"), ran);
        assertEquals(0, callThreadTasks.size());
    }

    private ServerCall.Listener<String> startUnary() {
        return start(MethodDescriptor.MethodType.UNARY);
    }

    private ServerCall.Listener<String> start(MethodDescriptor.MethodType type) {
        return new Offloading(executor, Set.of()).interceptCall(call(type), new Metadata(),
                (call, headers) -> new Recorder());
    }

    /** Runs what was handed to the executor on a thread of its own, as a call thread would, and waits for it. */
    private void runCallThread() {
        Thread thread = new Thread(() -> {
            Runnable task;
            while ((task = callThreadTasks.poll()) != null) {
                task.run();
            }
        }, "call-thread");
        thread.start();
        try {
            thread.join();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /** The service's listener: records each callback and where it ran. */
    private final class Recorder extends ServerCall.Listener<String> {
        @Override
        public void onMessage(String message) {
            record("message");
        }

        @Override
        public void onHalfClose() {
            record("halfClose");
        }

        @Override
        public void onCancel() {
            record("cancel");
        }

        @Override
        public void onComplete() {
            record("complete");
        }

        private void record(String callback) {
            boolean callThread = Thread.currentThread().getName().equals("call-thread");
            ran.add(callback + (callThread ? " on call thread" : " on event loop"));
        }
    }

    private static InertServerCall call(MethodDescriptor.MethodType type) {
        return new InertServerCall(type, type == MethodDescriptor.MethodType.UNARY ? "test/Unary" : "test/Streaming");
    }
}
