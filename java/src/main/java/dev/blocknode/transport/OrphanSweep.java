package dev.blocknode.transport;

import dev.blocknode.outcome.VolumeException;

import java.util.List;
import java.util.stream.Stream;

/**
 * What one sweep of a transport's leftovers did ({@link PathRepair#sweepOrphans}): what it removed (each also one log
 * line and a count), and what looks orphaned but was left alone because blocknode cannot prove it may remove it (a
 * session that still carries a disk, one blocknode has no proof of having made), each naming the thing and why.
 */
public record OrphanSweep(List<String> removed, List<String> kept) {

    public static final OrphanSweep NONE = new OrphanSweep(List.of(), List.of());

    public OrphanSweep {
        removed = List.copyOf(removed);
        kept = List.copyOf(kept);
    }

    /** This sweep's findings, then {@code next}'s: one transport's sweeps of different kinds of leftovers. */
    public OrphanSweep and(OrphanSweep next) {
        return new OrphanSweep(Stream.concat(removed.stream(), next.removed.stream()).toList(),
                Stream.concat(kept.stream(), next.kept.stream()).toList());
    }

    /**
     * The attach requests of every staging record of a transport, whatever its phase (an interrupted attach or
     * teardown still names its target), read anew each time it is called: the sweep reads them again after it has
     * taken a session's lock.
     */
    @FunctionalInterface
    public interface Recorded {
        /** @throws VolumeException when a record cannot be read: it may name anything, so nothing is swept */
        List<AttachRequest> read() throws VolumeException;
    }
}
