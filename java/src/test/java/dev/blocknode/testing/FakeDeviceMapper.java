package dev.blocknode.testing;

import dev.blocknode.os.block.DeviceMapper;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A {@link DeviceMapper} that records each call ("remove mpatha", "message mpatha fail_if_no_path",
 * "openCount mpatha") and answers as told: {@link #unavailable()} as a node without a usable control node,
 * else removes answer from a queue of {@link Removal}s (then {@link Removal#REMOVED}) and run an action on
 * success (a test's {@link FakeSysfs#removeMap}).
 */
public final class FakeDeviceMapper implements DeviceMapper {

    /** What a remove that succeeds does to the test's world. */
    @FunctionalInterface
    public interface OnRemove {
        void removed(String map) throws IOException;
    }

    private final List<String> calls = new ArrayList<>();
    private final Deque<Removal> removals = new ArrayDeque<>();
    private final Map<String, Integer> openCounts = new ConcurrentHashMap<>();
    private boolean unavailable;
    private Removal always;
    private OnRemove onRemove = map -> { };

    /** A node whose control node cannot be used: every call throws {@link UnavailableException}. */
    public static FakeDeviceMapper unavailable() {
        FakeDeviceMapper fake = new FakeDeviceMapper();
        fake.unavailable = true;
        return fake;
    }

    /** The next removes answer these, in turn. */
    public FakeDeviceMapper removesAnswer(Removal... answers) {
        removals.addAll(List.of(answers));
        return this;
    }

    /** Every remove answers this. */
    public FakeDeviceMapper removesAlwaysAnswer(Removal answer) {
        always = answer;
        return this;
    }

    public FakeDeviceMapper onRemove(OnRemove action) {
        onRemove = action;
        return this;
    }

    public FakeDeviceMapper openCount(String map, int count) {
        openCounts.put(map, count);
        return this;
    }

    /** The calls so far, in order. */
    public synchronized List<String> calls() {
        return List.copyOf(calls);
    }

    @Override
    public synchronized boolean message(String map, String message) throws IOException {
        record("message " + map + " " + message);
        return true;
    }

    @Override
    public synchronized int openCount(String map) throws IOException {
        record("openCount " + map);
        return openCounts.getOrDefault(map, 0);
    }

    @Override
    public synchronized Removal remove(String map) throws IOException {
        record("remove " + map);
        Removal answer = always != null ? always : removals.isEmpty() ? Removal.REMOVED : removals.poll();
        if (answer == Removal.REMOVED) {
            onRemove.removed(map);
        }
        return answer;
    }

    private void record(String call) throws UnavailableException {
        calls.add(call);
        if (unavailable) {
            throw new UnavailableException("device-mapper control unusable (fake)", null);
        }
    }
}
