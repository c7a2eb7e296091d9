package dev.blocknode.transport.iscsi;

import java.util.OptionalInt;

/**
 * {@code node.session.timeo.replacement_timeout}: how long a broken session holds its I/O while iscsid tries
 * to log in again, before failing it upwards (to dm-multipath, or to the filesystem when there is no map).
 *
 * <p>A record made with {@code iscsiadm -o new} takes iscsid.conf's value: 120 s on Debian and open-iscsi's
 * own default. Through dm-multipath that is two minutes of stalled I/O on a dead portal before the map may
 * use another path; open-iscsi's README ("Optimal replacement_timeout Value") says 5 to 15 s is right with
 * multipath, because multipath's no_path_retry/queue_if_no_path, not the iSCSI layer, then decides what
 * happens to I/O when every path is gone. So a LUN used through a map gets {@link #WITH_MULTIPATH}: the
 * upper end of that range, so that a short blip (a relogin takes a few seconds) does not fail a path.
 * (multipathd also sets the session's recovery_tmo from its fast_io_fail_tmo once it owns the path, when
 * that is configured; this value covers the time before, and nodes where it is not.)
 *
 * <p>A single path without multipathd keeps iscsid.conf's value: there the session is the only way to the
 * data, and failing I/O after a few seconds would turn a target's failover or reboot into filesystem
 * errors; waiting is the safer default. The volume context key {@code replacementTimeout} overrides both.
 */
public final class ReplacementTimeout {

    /** The node record setting. */
    public static final String SETTING = "node.session.timeo.replacement_timeout";
    /** Seconds, for a LUN used through a multipath map (see the class comment). */
    public static final int WITH_MULTIPATH = 15;
    /** Above an hour a dead path is as good as hung; -1 (wait forever) would hang unstage too. */
    static final int MAX_SECONDS = 3600;

    private ReplacementTimeout() {
    }

    /** Whole seconds, 0 (fail at once) to {@link #MAX_SECONDS}. */
    static int parse(String text) {
        int seconds;
        try {
            seconds = Integer.parseInt(text.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a whole number of seconds");
        }
        if (seconds < 0 || seconds > MAX_SECONDS) {
            throw new IllegalArgumentException("must be 0 to " + MAX_SECONDS + " seconds");
        }
        return seconds;
    }

    /**
     * The value a new record for {@code spec} gets, or empty to keep iscsid.conf's.
     *
     * @param multipath whether the LUN will be used through a multipath map (several portals, or multipathd
     *                  runs on the node: the rule of {@link dev.blocknode.transport.san.LunAttacher})
     */
    static OptionalInt forRecord(IscsiVolumeSpec spec, boolean multipath) {
        if (spec.replacementTimeout().isPresent()) {
            return spec.replacementTimeout();
        }
        return multipath ? OptionalInt.of(WITH_MULTIPATH) : OptionalInt.empty();
    }
}
