package dev.blocknode.os.uevent;

import java.io.IOException;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Listens to the kernel's uevents on one daemon thread and wakes every thread that is pausing between two
 * looks at sysfs as soon as a storage-related event arrives: a disk, a SCSI device, an iSCSI session, an NVMe
 * controller or a multipath (dm) map appearing, changing or going. The pausing threads then look at sysfs
 * again themselves; an event only says "look now", so a lost or unexpected event can delay a wait, never
 * mislead it.
 *
 * <p>A pause still ends after its timeout without any event: that is the slow poll which catches whatever
 * the events do not announce, and the whole behaviour after the reader gave up (its source kept failing).
 */
public final class KernelEvents implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(KernelEvents.class.getName());

    /**
     * The subsystems whose events can change what the SCSI, iSCSI, FC, NVMe and multipath waits look for (an
     * NVMe controller's add, reconnect and remove are "nvme" events; its namespace disks are "block" ones).
     */
    public static final Set<String> STORAGE_SUBSYSTEMS = Set.of("block", "scsi", "scsi_device", "scsi_disk",
            "scsi_host", "iscsi_session", "iscsi_connection", "iscsi_host", "fc_host", "fc_remote_ports",
            "fc_transport", "nvme", "nvme-subsystem");

    /** How long one receive blocks: bounds how long close() waits for the reader to notice. */
    static final Duration RECEIVE_SLICE = Duration.ofMillis(100);
    /** After this many failures in a row (other than lost events) the source is taken as broken. */
    static final int FAILURES_BEFORE_GIVING_UP = 10;

    private final UeventSource source;
    private final Predicate<Uevent> relevant;
    private final Thread reader;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /** Counts wake-ups (relevant events, lost events); guarded by lock. */
    private long generation;
    /**
     * The generation each thread saw when its last pause ended. An event that arrives while a thread looks
     * (between two pauses) must end its next pause at once, or that look would miss it and the thread would
     * sleep a whole interval.
     */
    private final ThreadLocal<Long> seenByThread = ThreadLocal.withInitial(() -> -1L);
    /** System.nanoTime() when the last wake-up happened; valid once generation > 0. */
    private volatile long lastWakeNanos;
    private volatile boolean closed;
    private volatile boolean listening = true;

    private KernelEvents(UeventSource source, Predicate<Uevent> relevant) {
        this.source = source;
        this.relevant = relevant;
        this.reader = Thread.ofPlatform().daemon().name("blocknode-uevents").unstarted(this::readLoop);
    }

    /** Starts listening on {@code source}, which this object then owns (and closes). */
    public static KernelEvents start(UeventSource source, Predicate<Uevent> relevant) {
        KernelEvents events = new KernelEvents(source, relevant);
        events.reader.start();
        return events;
    }

    /** Events of the storage subsystems only. */
    public static KernelEvents startForStorage(UeventSource source) {
        return start(source, event -> STORAGE_SUBSYSTEMS.contains(event.subsystem()));
    }

    /**
     * Blocks for at most {@code atMost}, or less: until a relevant event arrives, at once if one arrived since
     * this thread's previous pause ended (so a thread's first pause ends at once whenever any event was ever
     * seen: one extra look, never a missed event). Shaped to serve as a {@code DeviceWaiter.Pause}.
     */
    public void pause(Duration atMost) throws InterruptedException {
        long nanos = atMost.toNanos();
        lock.lockInterruptibly();
        try {
            long seen = seenByThread.get();
            // Once the reader has stopped nothing signals any more: each pause is then a plain timed one.
            while (generation == seen && nanos > 0) {
                nanos = changed.awaitNanos(nanos);
            }
            seenByThread.set(generation);
        } finally {
            lock.unlock();
        }
    }

    /** {@link System#nanoTime()} when the last relevant (or lost) event arrived; empty before the first. */
    public OptionalLong lastEventNanos() {
        return wakeups() == 0 ? OptionalLong.empty() : OptionalLong.of(lastWakeNanos);
    }

    /** How often waiters were woken so far (relevant or lost events). */
    long wakeups() {
        lock.lock();
        try {
            return generation;
        } finally {
            lock.unlock();
        }
    }

    /** False once the reader stopped: after close, or after its source kept failing. */
    public boolean listening() {
        return listening;
    }

    private void readLoop() {
        int failures = 0;
        try {
            while (!closed) {
                try {
                    source.receive(RECEIVE_SLICE).filter(relevant).ifPresent(event -> wakeAll());
                    failures = 0;
                } catch (EventsLostException e) {
                    LOG.log(Level.FINE, "kernel uevents were lost; waking every waiter to look again", e);
                    wakeAll();
                } catch (IOException | RuntimeException e) {
                    if (++failures >= FAILURES_BEFORE_GIVING_UP) {
                        LOG.log(Level.WARNING, "kernel uevents: the netlink socket failed " + failures
                                + " times in a row; device waits fall back to polling", e);
                        return;
                    }
                }
            }
        } finally {
            listening = false;
            try {
                source.close();
            } catch (IOException | RuntimeException e) {
                LOG.log(Level.FINE, "closing the uevent source", e);
            }
        }
    }

    private void wakeAll() {
        lastWakeNanos = System.nanoTime();
        lock.lock();
        try {
            generation++;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Stops the reader and closes the source; waits for that, at most about one receive slice. */
    @Override
    public void close() {
        closed = true;
        try {
            reader.join(RECEIVE_SLICE.multipliedBy(20));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
