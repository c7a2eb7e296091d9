package dev.blocknode.transport;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Mutual exclusion per key (an iSCSI session, an FC target): two volumes of one target must not log in
 * twice, and one volume's logout must not race another's login and scan on the same session. Entries
 * are dropped when nobody holds or waits for them.
 */
public final class KeyedLocks<K> {

    private static final class Entry {
        final ReentrantLock lock = new ReentrantLock();
        int users;
    }

    private final ConcurrentHashMap<K, Entry> entries = new ConcurrentHashMap<>();

    /** A held lock; closing it releases it. */
    public interface Held extends AutoCloseable {
        @Override
        void close();
    }

    /** Holds the key's lock until closed. */
    public Held lock(K key) {
        Entry entry = entries.compute(key, (k, e) -> {
            Entry held = e == null ? new Entry() : e;
            held.users++;
            return held;
        });
        entry.lock.lock();
        return () -> {
            entry.lock.unlock();
            entries.computeIfPresent(key, (k, e) -> --e.users == 0 ? null : e);
        };
    }

    int size() {
        return entries.size();
    }
}
